"""The server the abuse benchmarks (`distinct_names.py`, `interest_flood.py`) measure: BINARY on a new temporary
SQLite store with one instance and errors-only logging, on a free loopback port."""
import http.client, json, socket, subprocess, tempfile, time

INSTANCE = "6f0f1a8e-2f5b-4c9e-8a51-0c7f3e2d9b14"


def start(binary, health_source="127.0.0.1"):
    """Starts BINARY and waits (up to 10 s) until `GET /health` answers a connection from `health_source`.
    - Returns: (the process, its port, the store's directory)."""
    d = tempfile.mkdtemp()
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    cfg = {"listen": {"host": "127.0.0.1", "port": port}, "storage": {"path": f"{d}/push.sqlite"},
           "log": {"level": "error"}, "instances": [{"id": INSTANCE, "secretKey": "x" * 40}]}
    open(f"{d}/c.json", "w").write(json.dumps(cfg))
    p = subprocess.Popen([binary, "serve", "--config", f"{d}/c.json"], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, source_address=(health_source, 0))
            c.request("GET", "/health"); c.getresponse().read(); break
        except OSError:
            time.sleep(0.1)
    return p, port, d
