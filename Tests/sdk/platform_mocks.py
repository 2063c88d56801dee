"""The FCM and Web Push stand-ins (Tests/Support/mock_fcm.py, mock_push_service.py) as processes for end-to-end
tests, next to the mock APNs of harness.py: each prints its ports on start-up and exits when its stdin closes."""
import json
import subprocess
import sys
from pathlib import Path

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from harness import CONTROL_TIMEOUT, ROOT, free_port, start_on_free_ports

SUPPORT = ROOT / "Tests" / "Support"
FCM_PROJECT = "push-server-e2e"


def _start(args, log: Path):
    proc = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=open(log, "ab"))
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"{args[0]} did not start: {log.read_text()[-2000:]}")
    return proc, json.loads(line)


class MockFCM:
    """The strict FCM v1 stand-in with one service account whose key file the server is configured with.
    `project`: the only project its `messages:send` accepts (default the account's own, FCM_PROJECT)."""

    def __init__(self, directory: Path, project: str = None):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
        self.service_account = directory / "service-account.json"
        log = directory / "mock_fcm.log"

        # The port is chosen here, not by the stand-in: the service account names its token endpoint. One another
        # worker took meanwhile is replaced (start_on_free_ports).
        def start(port):
            self.service_account.write_text(json.dumps({
                "type": "service_account", "project_id": FCM_PROJECT, "private_key_id": "e2e-key-1",
                "private_key": pem, "client_email": f"push@{FCM_PROJECT}.iam.gserviceaccount.com",
                "token_uri": f"https://127.0.0.1:{port}/token"}))
            return _start([str(SUPPORT / "mock_fcm.py"), "--port", str(port),
                           "--service-account", str(self.service_account),
                           *(["--project", project] if project else [])], log)

        (self.proc, info), _ = start_on_free_ports(start, log, [free_port()])
        self.base_url, self.ca_file = info["base_url"], info["ca_file"]
        self.control = f"http://127.0.0.1:{info['control_port']}"

    def config(self):
        """The instance's `fcm` section."""
        return {"serviceAccountFile": str(self.service_account), "endpointOverride": self.base_url,
                "caFile": self.ca_file}

    def configure(self, **switches):
        """Run-time switches, e.g. `token_refusal="invalid_grant"` (README.md next to mock_fcm.py)."""
        requests.put(f"{self.control}/config", json=switches, timeout=CONTROL_TIMEOUT).raise_for_status()

    def behave(self, token, answer, times=None):
        """Scripts `answer` (a marker kind or `ok`) for `token`, or every token with `*`."""
        body = {"answer": answer} if times is None else {"answer": answer, "times": times}
        requests.put(f"{self.control}/behaviours/{token}", json=body, timeout=CONTROL_TIMEOUT).raise_for_status()

    def clear_behaviours(self):
        requests.delete(f"{self.control}/behaviours", timeout=CONTROL_TIMEOUT).raise_for_status()

    def expire_tokens(self):
        """Every access token the stand-in issued expires now: the next send is answered 401."""
        requests.post(f"{self.control}/expire-tokens", timeout=CONTROL_TIMEOUT).raise_for_status()

    def requests(self, token=None):
        # Filtered here: the control API does not percent-decode its query, and registration tokens hold ':'.
        every = requests.get(f"{self.control}/requests", timeout=CONTROL_TIMEOUT).json()
        return [r for r in every if token is None or r["token"] == token]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class MockPushService:
    """The strict Web Push service stand-in, which also plays the browsers: it creates subscriptions and decrypts
    every message with the subscription's private key."""

    def __init__(self, directory: Path):
        self.proc, info = _start([str(SUPPORT / "mock_push_service.py"), "--port", "0"],
                                 directory / "mock_push_service.log")
        self.ca_file, self.origin = info["ca_file"], info["origin"]
        self.control = f"http://127.0.0.1:{info['control_port']}"

    def config(self, vapid_key_file):
        """The instance's `web` section: the stand-in's host and port (not 443) and address allowed, its CA trusted."""
        return {"vapidKeyFile": str(vapid_key_file), "subject": "mailto:ops@example.com",
                "pushServiceHosts": [self.origin.removeprefix("https://")], "allowedDestinations": ["127.0.0.1"],
                "caFile": self.ca_file}

    def subscribe(self, **options):
        response = requests.post(f"{self.control}/subscriptions", json=options, timeout=CONTROL_TIMEOUT)
        response.raise_for_status()
        return response.json()

    def messages(self, subscription_id=None):
        params = {"subscription": subscription_id} if subscription_id else {}
        return requests.get(f"{self.control}/messages", params=params, timeout=CONTROL_TIMEOUT).json()

    def requests(self):
        return requests.get(f"{self.control}/requests", timeout=CONTROL_TIMEOUT).json()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


HMS_APP_ID = "104433211"
HMS_CLIENT_SECRET = "e2e-hms-client-secret+/="


class MockHMS:
    """The strict Huawei Push Kit stand-in (Tests/Support/mock_hms.py): its own OAuth endpoint checking the client
    ID and secret, bearer tokens, body limits and field rules; `illegal-` tokens are refused (80100000/80300007)."""

    def __init__(self, directory: Path, secret: str = HMS_CLIENT_SECRET):
        self.proc, info = _start([str(SUPPORT / "mock_hms.py"), "--port", "0", "--app-id", HMS_APP_ID,
                                  "--client-secret", secret], directory / "mock_hms.log")
        self.base_url, self.token_url, self.ca_file = info["base_url"], info["token_url"], info["ca_file"]
        self.control = f"http://127.0.0.1:{info['control_port']}"

    def config(self, secret: str = HMS_CLIENT_SECRET):
        """The instance's `hms` section."""
        return {"appId": HMS_APP_ID, "clientSecret": secret, "endpointOverride": self.base_url,
                "tokenEndpointOverride": self.token_url, "caFile": self.ca_file}

    def _get(self, path):
        r = requests.get(f"{self.control}{path}", timeout=CONTROL_TIMEOUT)
        r.raise_for_status()
        return r.json()

    def stats(self):
        return self._get("/stats")

    def requests(self, since=0):
        return self._get(f"/requests?since={since}")

    def delivered(self):
        """Deliveries per token (accepted tokens only)."""
        return self._get("/delivered")

    def script(self, *answers):
        """The next requests' answers, e.g. `{"code": "80200003", "status": 401}` or `{"status": 503}`."""
        requests.put(f"{self.control}/script", json={"answers": list(answers)}, timeout=CONTROL_TIMEOUT).raise_for_status()

    def expire_tokens(self):
        requests.post(f"{self.control}/expire-tokens", timeout=CONTROL_TIMEOUT).raise_for_status()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
