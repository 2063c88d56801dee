"""A local webhook receiver for the end-to-end tests."""
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A local webhook receiver: records every POST and answers 200, except:

    - `fail_first`: the first N requests get 500;
    - `hold_first`: the first N requests get no answer; the handler waits until the client gives up and records
      when it closed the connection (`closed_at`);
    - `redirect_to`: every request gets `302 Found` with that `Location`;
    - `endless`: every request gets a 200 whose body never ends; `sent` counts the bytes written before the client
      closed the connection.
    `host` "::1" listens on IPv6 loopback."""

    def __init__(self, fail_first=0, host="127.0.0.1", hold_first=0, redirect_to=None, endless=False):
        self.received = []
        self.fail_first = fail_first
        self.hold_first = hold_first
        self.host = host
        self.sent = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802  (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                record = {"path": self.path, "headers": dict(self.headers), "raw": body, "body": json.loads(body),
                          "at": time.time(), "closed_at": None}
                with receiver.lock:
                    receiver.received.append(record)
                    fail = receiver.fail_first > 0
                    if fail:
                        receiver.fail_first -= 1
                    hold = receiver.hold_first > 0
                    if hold:
                        receiver.hold_first -= 1
                if hold:
                    self.connection.settimeout(60)
                    try:
                        self.connection.recv(1)  # b"" once the client closes
                    except OSError:
                        pass
                    record["closed_at"] = time.time()
                    self.close_connection = True
                    return
                if endless:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.end_headers()
                    chunk = b"x" * 16384
                    try:
                        while True:
                            self.wfile.write(chunk)
                            with receiver.lock:
                                receiver.sent += len(chunk)
                    except OSError:
                        record["closed_at"] = time.time()
                    self.close_connection = True
                    return
                if redirect_to:
                    self.send_response(302)
                    self.send_header("Location", redirect_to)
                else:
                    self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
            daemon_threads = True

        self.http = Server((host, 0), Handler)
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/hook", credentials=""):
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{credentials}{host}:{self.port}{path}"

    def bodies(self, publish_id):
        with self.lock:
            return [r for r in self.received if r["body"].get("publishId") == publish_id]

    def close(self):
        self.http.shutdown()
        self.http.server_close()
