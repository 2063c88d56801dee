"""Apple's rules for certificate-authenticated connections, as the mock applies them (`mock_apns.py --client-ca`).

With a client certificate, trust is settled in the TLS handshake (no certificate, an untrusted or an expired one:
the handshake fails); requests need no provider token and an `authorization` header is ignored. What the
certificate allows:

- topics: its subject UID (the bundle id) and every topic of its extension `1.2.840.113635.100.6.3.6` (a SEQUENCE
  of UTF8String topic + SEQUENCE of UTF8String kinds); any other topic: 400 BadTopic. The push type's suffix rule
  still applies (`apns_rules.check_topic`), with the UID and the topics of kind `app` as the bundle ids.
- no `apns-topic`: the UID is the default topic for a certificate with at most one topic; a multi-topic
  certificate gets 400 MissingTopic (Apple's error table).
- environment: extension `1.2.840.113635.100.6.3.1` marks a development (sandbox) certificate,
  `1.2.840.113635.100.6.3.2` a production one; a certificate whose markers leave out the environment the mock plays
  (`--environment`, sandbox by default) gets 403 BadCertificateEnvironment on every request. A certificate with no
  marker at all (self-made) is accepted: what APNs does with one is not known, and the mock does not guess.
- push types Apple documents as token-only (`liveactivity`, `location`): 400 InvalidPushType. This reason is the
  mock's assumption: Apple says certificate connections support "only a subset of push types" without naming the
  answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.oid import NameOID, ObjectIdentifier

from apns_rules import OK, Verdict, _err, check_topic

TOPICS_OID = ObjectIdentifier("1.2.840.113635.100.6.3.6")
SANDBOX_OID = ObjectIdentifier("1.2.840.113635.100.6.3.1")
PRODUCTION_OID = ObjectIdentifier("1.2.840.113635.100.6.3.2")
TOKEN_ONLY_PUSH_TYPES = frozenset({"liveactivity", "location"})


def _read_tlv(data: bytes, at: int) -> tuple[int, bytes, int]:
    """(tag, value, next offset) of the DER element at `at`; ValueError on truncation or unsupported forms."""
    if at + 2 > len(data):
        raise ValueError("truncated DER")
    tag, first = data[at], data[at + 1]
    at += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or at + count > len(data):
            raise ValueError("bad DER length")
        length = int.from_bytes(data[at:at + count], "big")
        at += count
    if at + length > len(data):
        raise ValueError("truncated DER value")
    return tag, data[at:at + length], at + length


def parse_topics(der: bytes) -> list[tuple[str, list[str]]]:
    """The topics extension's value as [(topic, [kind, …]), …]."""
    tag, body, end = _read_tlv(der, 0)
    if tag != 0x30 or end != len(der):
        raise ValueError("the topics extension is not one SEQUENCE")
    entries: list[tuple[str, list[str]]] = []
    at = 0
    while at < len(body):
        tag, value, at = _read_tlv(body, at)
        if tag == 0x0C:
            entries.append((value.decode("utf-8"), []))
        elif tag == 0x30 and entries:
            inner = 0
            while inner < len(value):
                kind_tag, kind, inner = _read_tlv(value, inner)
                if kind_tag != 0x0C:
                    raise ValueError("a kind is not a UTF8String")
                entries[-1][1].append(kind.decode("utf-8"))
        else:
            raise ValueError(f"unexpected tag {tag:#x} in the topics extension")
    return entries


@dataclass(frozen=True)
class ClientCertificate:
    """What the peer's certificate allows on one connection."""

    uid: str | None
    entries: tuple[tuple[str, tuple[str, ...]], ...]
    environments: frozenset[str] = frozenset()  # "sandbox", "production": the markers it carries

    @staticmethod
    def from_der(der: bytes) -> "ClientCertificate":
        cert = x509.load_der_x509_certificate(der)
        uids = cert.subject.get_attributes_for_oid(NameOID.USER_ID)
        uid = str(uids[0].value) if uids else None
        try:
            ext = cert.extensions.get_extension_for_oid(TOPICS_OID).value
            entries = parse_topics(ext.value)  # type: ignore[attr-defined]  (an UnrecognizedExtension)
        except x509.ExtensionNotFound:
            entries = []
        present = {ext.oid for ext in cert.extensions}
        environments = frozenset(name for name, oid in (("sandbox", SANDBOX_OID), ("production", PRODUCTION_OID))
                                 if oid in present)
        return ClientCertificate(uid, tuple((t, tuple(k)) for t, k in entries), environments)

    @property
    def topics(self) -> list[str]:
        out = [self.uid] if self.uid else []
        return out + [t for t, _ in self.entries if t not in out]

    def default_topic(self) -> str | None:
        """The topic of a request without `apns-topic`: the UID, unless the certificate has several topics."""
        return self.uid if len(self.entries) <= 1 else None

    def check_environment(self, environment: str) -> Verdict:
        """403 BadCertificateEnvironment when the markers leave out `environment` (an unmarked certificate passes)."""
        if self.environments and environment not in self.environments:
            return _err(403, "BadCertificateEnvironment")
        return OK

    def check_push_type(self, push_type: str) -> Verdict:
        return _err(400, "InvalidPushType") if push_type in TOKEN_ONLY_PUSH_TYPES else OK

    def check_topic(self, topic: str, push_type: str) -> Verdict:
        if topic not in self.topics:
            return _err(400, "BadTopic")
        bundles = {t for t, kinds in self.entries if "app" in kinds}
        if self.uid:
            bundles.add(self.uid)
        return check_topic(topic, push_type, frozenset(bundles))

    def to_json(self) -> dict[str, object]:
        return {"uid": self.uid, "topics": self.topics, "environments": sorted(self.environments)}
