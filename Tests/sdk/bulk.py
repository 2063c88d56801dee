"""Bulk device registration through the real device API: many keep-alive TLS connections, raw HTTP/1.1.

Each device costs two requests, exactly what an app does: `POST …/devices/apns` (register), then
`PUT …/devices/apns/{id}/interests` or, for a user's device, `PUT …/devices/apns/{id}/user` with a Beams token. `requests` manages ~1k requests/s from one Python process; a hand-written
asyncio client over `concurrency` connections manages several thousand, so 100,000 devices take about a minute.
"""
import asyncio
import json
import ssl
import time


class HTTPError(Exception):
    pass


async def _read_response(reader):
    status_line = await reader.readline()
    if not status_line:
        raise HTTPError("connection closed")
    status = int(status_line.split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return status, body


def _request(method, path, body, host, authorization=None):
    data = json.dumps(body, separators=(",", ":")).encode() if body is not None else b""
    auth = f"Authorization: Bearer {authorization}\r\n" if authorization else ""
    return (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{auth}"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


async def _register_all(host, port, cafile, instance_id, tokens, interest, user_tokens, concurrency):
    context = ssl.create_default_context(cafile=cafile)
    base = f"/device_api/v1/instances/{instance_id}/devices/apns"
    next_index = iter(range(len(tokens)))
    ids = [None] * len(tokens)

    async def worker():
        reader, writer = await asyncio.open_connection(host, port, ssl=context, server_hostname="localhost")
        try:
            for index in next_index:
                writer.write(_request("POST", base, {"token": tokens[index], "bundleIdentifier": "com.example.sdktest",
                                                     "metadata": {"sdkVersion": "4.0.0"}}, host))
                status, body = await _read_response(reader)
                if status != 200:
                    raise HTTPError(f"register: {status} {body[:200]!r}")
                device_id = json.loads(body)["id"]
                if user_tokens is not None:
                    writer.write(_request("PUT", f"{base}/{device_id}/user", None, host, user_tokens[index]))
                else:
                    writer.write(_request("PUT", f"{base}/{device_id}/interests", {"interests": [interest]}, host))
                status, body = await _read_response(reader)
                if status != 200:
                    raise HTTPError(f"interest or user: {status} {body[:200]!r}")
                ids[index] = device_id
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ids


def register_devices(server, instance_id, tokens, interest=None, concurrency=32, users=None, secret=None):
    """Registers every token and subscribes it to `interest`, or binds token i to user `users[i]` (Beams tokens
    signed with `secret`). - Returns: (device ids, seconds taken)."""
    user_tokens = None
    if users is not None:
        from pusher_push_notifications import PushNotifications

        beams = PushNotifications(instance_id=instance_id, secret_key=secret)
        user_tokens = [beams.generate_token(user)["token"] for user in users]
    started = time.monotonic()
    ids = asyncio.run(_register_all("127.0.0.1", server.port, server.cert, instance_id, tokens, interest,
                                    user_tokens, concurrency))
    return ids, time.monotonic() - started
