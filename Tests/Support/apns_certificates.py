#!/usr/bin/env python3
"""Test material for APNs certificate authentication: a client CA, client certificates shaped like Apple's
(subject UID = bundle id, OU = team id, the environment markers and the topics extension), `.p12` files (current
and legacy RC2-40 encryption) and PEM pairs.

Certificates are built with `cryptography` (it can date them in the past, for expired ones); `.p12` files come
from the `openssl` CLI, as an operator's would (`openssl pkcs12 -export`, `-legacy` for the RC2-40 kind).

As a script (for the Swift tests): `apns_certificates.py DIR` writes a set into DIR and prints its paths as
one JSON object (see `make_set`).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_server import new_ca  # noqa: E402  (sibling module: the mocks' own CA maker)

DEVELOPMENT_OID = ObjectIdentifier("1.2.840.113635.100.6.3.1")
PRODUCTION_OID = ObjectIdentifier("1.2.840.113635.100.6.3.2")
TOPICS_OID = ObjectIdentifier("1.2.840.113635.100.6.3.6")
DER_NULL = b"\x05\x00"


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _tlv(tag: int, value: bytes) -> bytes:
    return bytes([tag]) + _der_length(len(value)) + value


def topics_der(topics: list[tuple[str, list[str]]]) -> bytes:
    """The topics extension's value: SEQUENCE { UTF8String topic, SEQUENCE { UTF8String kind… } … }."""
    body = b"".join(_tlv(0x0C, t.encode()) + _tlv(0x30, b"".join(_tlv(0x0C, k.encode()) for k in kinds))
                    for t, kinds in topics)
    return _tlv(0x30, body)


@dataclass
class Authority:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    path: str


def make_ca(directory: str, name: str = "Test APNs client CA", file: str = "client-ca.pem") -> Authority:
    # Valid long before and after the client certificates it signs (expired ones included).
    key, cert = new_ca(name, days_before=800, days_after=800)
    path = os.path.join(directory, file)
    with open(path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    return Authority(key, cert, path)


@dataclass
class Client:
    cert_path: str
    key_path: str
    not_after: datetime.datetime


def make_client(ca: Authority, directory: str, name: str, uid: str = "com.example.app",
                topics: list[tuple[str, list[str]]] | None = None, team: str = "TEAMID1234",
                not_before_days: float = -1, not_after_days: float = 365, development: bool = True,
                production: bool = True, key_password: str | None = None) -> Client:
    """A client certificate valid from `now + not_before_days` to `now + not_after_days` (negative: past)."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([
        x509.NameAttribute(NameOID.USER_ID, uid),
        x509.NameAttribute(NameOID.COMMON_NAME, f"Apple Push Services: {uid}"),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, team),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example Ltd"),
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
    ])
    not_after = now + datetime.timedelta(days=not_after_days)
    builder = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(ca.cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + datetime.timedelta(days=not_before_days)).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    )
    if development:
        builder = builder.add_extension(x509.UnrecognizedExtension(DEVELOPMENT_OID, DER_NULL), critical=False)
    if production:
        builder = builder.add_extension(x509.UnrecognizedExtension(PRODUCTION_OID, DER_NULL), critical=False)
    if topics is not None:
        builder = builder.add_extension(x509.UnrecognizedExtension(TOPICS_OID, topics_der(topics)), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    cert_path = os.path.join(directory, f"{name}.pem")
    key_path = os.path.join(directory, f"{name}.key")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    encryption = (serialization.BestAvailableEncryption(key_password.encode()) if key_password
                  else serialization.NoEncryption())
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    return Client(cert_path, key_path, not_after)


def export_p12(client: Client, path: str, password: str, legacy: bool = False) -> str:
    """`openssl pkcs12 -export` (with `-legacy`: RC2-40, the old macOS Keychain kind OpenSSL 3 refuses)."""
    args = ["openssl", "pkcs12", "-export", "-in", client.cert_path, "-inkey", client.key_path,
            "-passout", f"pass:{password}", "-out", path]
    if legacy:
        args.insert(3, "-legacy")
    subprocess.run(args, check=True, capture_output=True)
    return path


def make_set(directory: str, password: str = "p12-secret") -> dict[str, str]:
    """Everything the Swift tests use; returns name → path (plus `password`)."""
    ca = make_ca(directory)
    topics = [("com.example.app", ["app"]), ("com.example.app.voip", ["voip"]),
              ("com.example.app.complication", ["complication"])]
    good = make_client(ca, directory, "client", topics=topics)
    single = make_client(ca, directory, "single", uid="com.example.single", topics=None, production=False)
    expired = make_client(ca, directory, "expired", topics=topics, not_before_days=-400, not_after_days=-1)
    future = make_client(ca, directory, "future", topics=topics, not_before_days=30, not_after_days=400)
    soon = make_client(ca, directory, "soon", topics=topics, not_after_days=10)
    other = make_client(ca, directory, "other", uid="com.example.other", topics=None)
    encrypted = make_client(ca, directory, "encrypted", topics=topics, key_password="key-secret")
    production = make_client(ca, directory, "production", topics=topics, development=False)
    unmarked = make_client(ca, directory, "unmarked", topics=topics, development=False, production=False)
    out = {
        "ca": ca.path, "password": password,
        "cert": good.cert_path, "key": good.key_path,
        "p12": export_p12(good, os.path.join(directory, "client.p12"), password),
        "legacy_p12": export_p12(good, os.path.join(directory, "legacy.p12"), password, legacy=True),
        "single_cert": single.cert_path, "single_key": single.key_path,
        "expired_cert": expired.cert_path, "expired_key": expired.key_path,
        "expired_p12": export_p12(expired, os.path.join(directory, "expired.p12"), password),
        "future_cert": future.cert_path, "future_key": future.key_path,
        "soon_p12": export_p12(soon, os.path.join(directory, "soon.p12"), password),
        "other_key": other.key_path,
        "encrypted_cert": encrypted.cert_path, "encrypted_key": encrypted.key_path, "key_password": "key-secret",
        "production_cert": production.cert_path, "production_key": production.key_path,
        "unmarked_cert": unmarked.cert_path, "unmarked_key": unmarked.key_path,
    }
    return out


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: apns_certificates.py DIR")
    print(json.dumps(make_set(sys.argv[1])))


if __name__ == "__main__":
    main()
