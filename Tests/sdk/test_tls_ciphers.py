"""The TLS listener's TLS 1.2 suites: ECDHE with AEAD only (docs/SECURITY.md, "Connections and request bodies").
A real client (Python's ssl, OpenSSL) offering only a static-RSA or a CBC suite is refused; ECDHE with AES-GCM or
ChaCha20-Poly1305 is accepted, for an RSA and an ECDSA certificate, and so is TLS 1.3."""
import datetime
import ipaddress
import socket
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from harness import Server


def write_rsa_self_signed(directory):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "rsa.crt", directory / "rsa.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="module")
def servers(environment):
    """(certificate kind, server): the harness's ECDSA certificate and an RSA one."""
    mock = environment.mock()
    ecdsa = environment.server(mock, name="tls-ecdsa")
    directory = environment.directory / "tls-rsa"
    directory.mkdir(exist_ok=True)
    cert, key = write_rsa_self_signed(directory)
    rsa_server = Server(directory, mock, environment.p8, cert, key)
    environment.processes.append(rsa_server)
    return {"ecdsa": ecdsa, "rsa": rsa_server}


def handshake(server, ciphers=None, tls13=False):
    """The negotiated suite, or the SSLError of a refused handshake. Certificates are not the point here."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if tls13:
        context.minimum_version = ssl.TLSVersion.TLSv1_3
    else:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        # SECLEVEL 0 so that the client itself is willing to offer the legacy suites.
        context.set_ciphers(f"{ciphers}:@SECLEVEL=0")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        try:
            with context.wrap_socket(raw) as tls:
                return tls.cipher()[0]
        except ssl.SSLError as error:
            return error


@pytest.mark.parametrize("kind,suite", [
    ("rsa", "AES128-SHA"),                    # static RSA key exchange, CBC, SHA-1
    ("rsa", "AES256-GCM-SHA384"),             # static RSA key exchange, AEAD
    ("rsa", "AES128-SHA256"),                 # static RSA, CBC, SHA-256
    ("rsa", "ECDHE-RSA-AES128-SHA"),          # ECDHE, CBC, SHA-1
    ("rsa", "ECDHE-RSA-AES256-SHA384"),       # ECDHE, CBC, SHA-384
    ("ecdsa", "ECDHE-ECDSA-AES128-SHA"),
    ("ecdsa", "ECDHE-ECDSA-AES256-SHA384"),
])
def test_a_client_offering_only_a_static_rsa_or_cbc_suite_is_refused(servers, kind, suite):
    result = handshake(servers[kind], suite)
    assert isinstance(result, ssl.SSLError), f"{suite} was negotiated"


@pytest.mark.parametrize("kind,suite", [
    ("rsa", "ECDHE-RSA-AES128-GCM-SHA256"),
    ("rsa", "ECDHE-RSA-AES256-GCM-SHA384"),
    ("rsa", "ECDHE-RSA-CHACHA20-POLY1305"),
    ("ecdsa", "ECDHE-ECDSA-AES128-GCM-SHA256"),
    ("ecdsa", "ECDHE-ECDSA-CHACHA20-POLY1305"),
])
def test_ecdhe_with_aead_is_accepted(servers, kind, suite):
    assert handshake(servers[kind], suite) == suite


def test_tls13_is_accepted_with_either_certificate(servers):
    for kind in ("rsa", "ecdsa"):
        assert handshake(servers[kind], tls13=True).startswith("TLS_"), kind
