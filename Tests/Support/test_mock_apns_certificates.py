"""The mock's certificate-auth mode (`--client-ca`, apns_cert_rules.py) over real TLS + HTTP/2."""

from __future__ import annotations

import ssl

import pytest

import apns_certificates as certs
from apns_cert_rules import parse_topics
from mock_apns_testkit import H2Client, Mock, keys, sign_jwt  # noqa: F401  (fixture)

TOKEN = "ab" * 32
TOPICS = [("com.example.app", ["app"]), ("com.example.app.voip", ["voip"])]


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory):
    d = str(tmp_path_factory.mktemp("certs"))
    ca = certs.make_ca(d)
    other_ca = certs.make_ca(d, name="Another CA", file="other-ca.pem")
    return {
        "ca": ca,
        "multi": certs.make_client(ca, d, "multi", topics=TOPICS),
        "single": certs.make_client(ca, d, "single", uid="com.example.single", topics=None),
        "expired": certs.make_client(ca, d, "expired", topics=TOPICS, not_before_days=-30, not_after_days=-1),
        "stranger": certs.make_client(other_ca, d, "stranger", topics=TOPICS),
        "sandbox": certs.make_client(ca, d, "sandbox", topics=TOPICS, production=False),
        "production": certs.make_client(ca, d, "production", topics=TOPICS, development=False),
        "unmarked": certs.make_client(ca, d, "unmarked", topics=TOPICS, development=False, production=False),
    }


@pytest.fixture(scope="module")
def cert_mock(material):
    m = Mock(["--client-ca", material["ca"].path, "--topic", "com.example.ignored", "--max-streams", "20"])
    yield m
    m.stop()


def connect(mock: Mock, client) -> H2Client:
    return H2Client(mock, client_cert=(client.cert_path, client.key_path))


def test_topics_der_round_trips():
    assert parse_topics(certs.topics_der(TOPICS)) == TOPICS


def test_delivers_with_a_certificate_and_no_token(cert_mock, material):
    c = connect(cert_mock, material["multi"])
    r = c.request(TOKEN, None, topic="com.example.app")
    assert r.status == 200, r.body
    voip = c.request(TOKEN, None, topic="com.example.app.voip", push_type="voip")
    assert voip.status == 200, voip.body
    assert 20 in c.max_streams_seen, "certificate connections get the full stream budget at once"
    record = cert_mock.requests(TOKEN)[-1]
    assert record["certificate"]["uid"] == "com.example.app"
    c.close()


def test_authorization_header_is_ignored(cert_mock, material, keys):  # noqa: F811
    c = connect(cert_mock, material["multi"])
    assert c.request(TOKEN, "not-a-jwt", topic="com.example.app").status == 200
    assert c.request(TOKEN, sign_jwt(keys.stranger), topic="com.example.app").status == 200
    c.close()


def test_topic_outside_the_certificate_is_bad_topic(cert_mock, material):
    c = connect(cert_mock, material["multi"])
    r = c.request(TOKEN, None, topic="com.example.ignored")
    assert (r.status, r.reason) == (400, "BadTopic")
    mismatch = c.request(TOKEN, None, topic="com.example.app.voip", push_type="alert")
    assert (mismatch.status, mismatch.reason) == (400, "DeviceTokenNotForTopic")
    c.close()


def test_missing_topic_uses_the_uid_only_on_single_topic_certificates(cert_mock, material):
    single = connect(cert_mock, material["single"])
    assert single.request(TOKEN, None, topic=None).status == 200
    single.close()
    multi = connect(cert_mock, material["multi"])
    r = multi.request(TOKEN, None, topic=None)
    assert (r.status, r.reason) == (400, "MissingTopic")
    multi.close()


@pytest.mark.parametrize("push_type,suffix", [("liveactivity", ".push-type.liveactivity"),
                                              ("location", ".location-query")])
def test_token_only_push_types_are_refused(cert_mock, material, push_type, suffix):
    c = connect(cert_mock, material["multi"])
    r = c.request(TOKEN, None, topic="com.example.app" + suffix, push_type=push_type)
    assert (r.status, r.reason) == (400, "InvalidPushType")
    c.close()


def refused(mock: Mock, client_cert: tuple[str, str] | None) -> bool:
    """Whether the mock refuses the TLS handshake (TLS 1.3 reports it on the first read, as EOF or an alert)."""
    try:
        c = H2Client(mock, client_cert=client_cert)
        r = c.request(TOKEN, None, topic="com.example.app")
        c.close()
        return c.closed and r.status is None
    except (ssl.SSLError, OSError):
        return True


@pytest.mark.parametrize("which", [None, "expired", "stranger"])
def test_handshake_fails_without_a_valid_certificate_from_the_ca(cert_mock, material, which):
    client = None if which is None else (material[which].cert_path, material[which].key_path)
    assert refused(cert_mock, client)
    assert not refused(cert_mock, (material["multi"].cert_path, material["multi"].key_path))


@pytest.mark.parametrize("environment,accepted,refused_with", [
    ("sandbox", ["multi", "sandbox", "unmarked"], "production"),
    ("production", ["multi", "production", "unmarked"], "sandbox"),
])
def test_a_certificate_not_marked_for_the_mocks_environment_is_bad_certificate_environment(
        material, environment, accepted, refused_with):
    mock = Mock(["--client-ca", material["ca"].path, "--environment", environment])
    try:
        for name in accepted:
            c = connect(mock, material[name])
            assert c.request(TOKEN, None, topic="com.example.app").status == 200, name
            c.close()
        c = connect(mock, material[refused_with])
        r = c.request(TOKEN, None, topic="com.example.app")
        assert (r.status, r.reason) == (403, "BadCertificateEnvironment")
        c.close()
        assert mock.requests(TOKEN)[-1]["certificate"]["environments"] == [refused_with]
    finally:
        mock.stop()
