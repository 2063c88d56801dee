"""A local webhook receiver for the end-to-end tests."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A local webhook receiver: records every POST; answers `fail_first` requests with 500, then 200."""

    def __init__(self, fail_first=0):
        self.received = []
        self.fail_first = fail_first
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802  (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.received.append({"path": self.path, "headers": dict(self.headers), "raw": body,
                                              "body": json.loads(body), "at": time.time()})
                    fail = receiver.fail_first > 0
                    if fail:
                        receiver.fail_first -= 1
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/hook", credentials=""):
        return f"http://{credentials}127.0.0.1:{self.port}{path}"

    def bodies(self, publish_id):
        with self.lock:
            return [r for r in self.received if r["body"].get("publishId") == publish_id]

    def close(self):
        self.http.shutdown()
        self.http.server_close()
