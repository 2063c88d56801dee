"""The completion estimate of a running publish (docs/API.md, `estimatedCompletionAt`) end to end: the real server
binary against the strict mock APNs, a paced publish sampled while it runs and once it finished. Sized to the
property (a few seconds at a pace far below the mock's capacity); its accuracy at scale is measured in bench/eta."""
import re
import time

from beams import Beams, alert, random_token, unique, wait_for
from bulk import register_devices
from harness import INSTANCE_ID
from test_publish_schedule import parse_time

DEVICES, PER_MINUTE = 120, 1200  # 20 per second: about 6 s


def estimate_gauge(client):
    text = client.session.get(client.server.url("/metrics"), timeout=10).text
    found = re.search(r'^push_publish_estimate_remaining_seconds\{beams_instance="%s"\} (\S+)$' % INSTANCE_ID, text, re.M)
    return float(found.group(1)) if found else None


def test_running_paced_publish_reports_a_plausible_estimate_and_a_finished_one_none(env):
    server, _ = env
    client = Beams(server)
    interest = unique("eta")
    register_devices(server, INSTANCE_ID, [random_token() for _ in range(DEVICES)], interest)
    publish_id = client.publish("interests", {"interests": [interest], "apns": alert("paced"),
                                              "x_delivery": {"throttlePerMinute": PER_MINUTE}})

    def estimated():
        status = client.status(publish_id)
        if status["status"] == "finished":
            raise AssertionError(f"finished before any status showed an estimate: {status}")
        return status if "estimatedCompletionAt" in status else None

    running = wait_for(estimated, timeout=30, message="no running status with an estimate")
    asked = time.time()
    assert running["status"] == "running"
    answered = running["apns"]["accepted"] + running["apns"]["failed"]
    # Targets left as of the same checkpoint as the counts (answers that came in while it was written: at most
    # about a second of the pace).
    assert DEVICES - answered <= running["remainingTargets"] <= DEVICES - answered + PER_MINUTE // 60, running
    # The pace bounds the rate (a loaded machine may be slower, never faster).
    assert 0 < running["estimateRatePerSecond"] <= PER_MINUTE / 60, running
    left = parse_time(running["estimatedCompletionAt"]) - asked
    expected = running["remainingTargets"] / running["estimateRatePerSecond"]
    # The status's own arithmetic (now + remaining / rate), and no more than the pace allows for what is left.
    assert abs(left - expected) <= 1, (left, expected, running)
    assert 0 < expected, running
    gauge = wait_for(lambda: (value := estimate_gauge(client)) and value > 0 and value, timeout=10,
                     message="no positive estimate in /metrics while the publish runs")
    assert gauge <= DEVICES / (PER_MINUTE / 60) * 10, gauge

    finished = client.wait_finished(publish_id, timeout=60)
    assert finished["apns"]["accepted"] == DEVICES
    for member in ("estimatedCompletionAt", "estimateRatePerSecond", "remainingTargets"):
        assert member not in finished, finished
    assert estimate_gauge(client) == 0, "no run left with an estimate"
