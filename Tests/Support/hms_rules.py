"""The rules of Huawei Push Kit's v1 send API and OAuth token endpoint, as pure functions (mock_hms.py serves them).

Sources, summarised in docs/API.md "Huawei Push Kit": the client-credentials grant (form body, `client_id`,
`client_secret`; `access_token`, `expires_in`, `token_type` Bearer), `POST /v1/{appId}/messages:send` with
`{"validate_only":…, "message":{…}}`, at most 1000 tokens, the message without its tokens at most 4096 bytes,
exactly one of `token`/`topic`/`condition`, `data` a string, a notification needs `android.notification.click_action`
(type 1 needs intent or action, type 2 url), and each answer `{"code":"8 digits","msg":…,"requestId":…}`.
"""

from __future__ import annotations

import json
import re
import secrets
import urllib.parse
from dataclasses import dataclass
from typing import Any

from fcm_rules import Answer

SEND_PATH = re.compile(r"/v1/([^/]+)/messages:send")
MAX_TOKENS = 1000
MAX_MESSAGE_BYTES = 4096


def result(code: str, msg: str = "Success", status: int = 200) -> Answer:
    return Answer(status, {"code": code, "msg": msg, "requestId": secrets.token_hex(8)}, error_code=code)


def oauth_error(error: int, sub_error: int, description: str, status: int = 400) -> Answer:
    return Answer(status, {"error": error, "sub_error": sub_error, "error_description": description},
                  error_code=str(error))


def check_token_request(content_type: str | None, body: bytes, client_id: str, client_secret: str) -> Answer | None:
    """None when the form is a valid client-credentials grant for this client; else Huawei's refusal."""
    if (content_type or "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return oauth_error(1101, 20001, "content type must be application/x-www-form-urlencoded")
    try:
        form = urllib.parse.parse_qs(body.decode(), strict_parsing=True, keep_blank_values=True)
    except (UnicodeDecodeError, ValueError):
        return oauth_error(1101, 20001, "malformed form body")
    values = {k: v for k, v in form.items()}
    if any(len(v) != 1 for v in values.values()):
        return oauth_error(1101, 20001, "repeated parameter")
    if values.get("grant_type", [""])[0] != "client_credentials":
        return oauth_error(1101, 20001, "unsupported grant_type")
    if values.get("client_id", [""])[0] != client_id:
        return oauth_error(1101, 12303, "invalid client_id")
    if values.get("client_secret", [""])[0] != client_secret:
        return oauth_error(1101, 12304, "invalid client_secret")
    return None


def check_send(body: bytes) -> tuple[dict[str, Any] | None, list[str], Answer | None]:
    """(message, tokens, None) for a send Huawei would take; else the code it answers."""
    try:
        root = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return None, [], result("80100018", "invalid message body", 400)
    if not isinstance(root, dict) or not isinstance(root.get("message"), dict):
        # A misspelt `message` key reads as no token at all.
        return None, [], result("80300010", "the number of tokens must be 1 to 1000", 400)
    if set(root) - {"validate_only", "message"}:
        return None, [], result("80100001", "unknown field", 400)
    if "validate_only" in root and not isinstance(root["validate_only"], bool):
        return None, [], result("80100001", "validate_only must be a boolean", 400)
    message = root["message"]
    targets = [k for k in ("token", "topic", "condition") if k in message]
    if len(targets) != 1:
        return message, [], result("80100001", "exactly one of token, topic, condition", 400)
    tokens = message.get("token")
    if not isinstance(tokens, list) or not all(isinstance(t, str) and t for t in tokens):
        return message, [], result("80100001", "token must be an array of strings", 400)
    if not 1 <= len(tokens) <= MAX_TOKENS:
        return message, [], result("80300010", "the number of tokens must be 1 to 1000", 400)
    if len(set(tokens)) != len(tokens):
        return message, [], result("80100001", "repeated token", 400)
    without = {k: v for k, v in message.items() if k != "token"}
    size = len(json.dumps(without, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_MESSAGE_BYTES:
        return message, [], result("80300008", "the message body exceeds 4096 bytes", 400)
    if "data" in message and not isinstance(message["data"], str):
        return message, [], result("80100001", "data must be a string", 400)
    android = message.get("android", {})
    if not isinstance(android, dict):
        return message, [], result("80100003", "android must be an object", 400)
    if "urgency" in android and android["urgency"] not in ("HIGH", "NORMAL"):
        return message, [], result("80100001", "urgency", 400)
    if "collapse_key" in android and (not isinstance(android["collapse_key"], int)
                                      or not -1 <= android["collapse_key"] <= 100):
        return message, [], result("80100013", "collapse_key is illegal", 400)
    notification = android.get("notification")
    if "notification" in message and notification is None:
        return message, [], result("80100003", "a notification needs android.notification.click_action", 400)
    if notification is not None:
        action = notification.get("click_action") if isinstance(notification, dict) else None
        if not isinstance(action, dict) or action.get("type") not in (1, 2, 3, 4):
            return message, [], result("80100003", "click_action.type must be 1 to 4", 400)
        if action["type"] == 1 and not (action.get("intent") or action.get("action")):
            return message, [], result("80100003", "click_action type 1 needs intent or action", 400)
        if action["type"] == 2 and not action.get("url"):
            return message, [], result("80100003", "click_action type 2 needs url", 400)
    return message, tokens, None


@dataclass
class IssuedToken:
    value: str
    expires_at: float


def issue_token(now: float, lifetime: int) -> tuple[IssuedToken, Answer]:
    # A slash in the token: the client must decode `\/` from JSON, never scrape it (Huawei's guide).
    token = IssuedToken("CF/" + secrets.token_urlsafe(24), now + lifetime)
    return token, Answer(200, {"access_token": token.value, "expires_in": lifetime, "token_type": "Bearer"})


def partial(illegal: list[str], total: int) -> Answer:
    msg = json.dumps({"success": total - len(illegal), "failure": len(illegal), "illegal_tokens": illegal})
    return result("80100000", msg)
