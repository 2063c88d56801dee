#!/usr/bin/env python3
"""Independent checks for the Swift Web Push code (run by Tests/WebPushTests through PUSH_TEST_PYTHON).

  webpush_decrypt.py decrypt (--private-key PEM | --private-scalar B64URL) --auth B64URL   < base64url body
      Decrypts an aes128gcm body with http_ece (RFC 8291) and prints
      {"plaintext": b64url, "rs": int, "idlen": int, "keyid": b64url}. Exit 2 with the reason on stderr when the
      body does not decrypt.
  webpush_decrypt.py vapid --audience ORIGIN [--now SECONDS] [--key B64URL]   < Authorization header value
      Verifies the VAPID header with `cryptography` and prints {"header": {...}, "claims": {...}, "k": ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

import webpush_rules  # noqa: E402
from webpush_rules import Rejection, b64url, b64url_decode  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    d = sub.add_parser("decrypt")
    d.add_argument("--private-key", help="the subscriber's private key PEM file")
    d.add_argument("--private-scalar", help="the subscriber's private scalar, base64url")
    d.add_argument("--auth", required=True)
    v = sub.add_parser("vapid")
    v.add_argument("--audience", required=True)
    v.add_argument("--now", type=int, default=None)
    v.add_argument("--key", default=None)
    args = p.parse_args()
    text = sys.stdin.read().strip()
    try:
        if args.mode == "decrypt":
            if args.private_key:
                with open(args.private_key, "rb") as f:
                    key = serialization.load_pem_private_key(f.read(), password=None)
            else:
                key = ec.derive_private_key(int.from_bytes(b64url_decode(args.private_scalar), "big"), ec.SECP256R1())
            body = b64url_decode(text)
            plaintext = webpush_rules.decrypt(body, key, b64url_decode(args.auth))
            print(json.dumps({"plaintext": b64url(plaintext), "rs": struct.unpack("!I", body[16:20])[0],
                              "idlen": body[20], "keyid": b64url(body[21:86])}))
        else:
            now = int(time.time()) if args.now is None else args.now
            vapid = webpush_rules.verify_vapid(text, args.audience, now, args.key)
            header = json.loads(b64url_decode(webpush_rules.parse_vapid_header(text)[0].split(".")[0]))
            print(json.dumps({"header": header, "claims": vapid.claims, "k": vapid.public_key}))
    except Rejection as e:
        print(f"{e.status} {e.reason}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
