#!/usr/bin/env python3
"""Publishes to the `bench` interest, samples the status every 0.25 s until `finished` and prints the completion
estimate's error at 25/50/75 % of the devices answered (bench/eta/run.sh describes the method).

  sample.py BASE_URL INSTANCE SECRET N THROTTLE_PER_MINUTE SAMPLES_JSONL"""
import json
import sys
import time
import urllib.request
from datetime import datetime

base, instance, secret, n, throttle, samples_path = sys.argv[1:7]
n, throttle = int(n), int(throttle)
headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}


def call(method, path, body=None):
    request = urllib.request.Request(f"{base}/publish_api/v1/instances/{instance}{path}", method=method,
                                     headers=headers, data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def seconds(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


body = {"interests": ["bench"],
        "apns": {"aps": {"alert": {"title": "Benchmark", "body": "A notification body of a typical size."}}}}
if throttle:
    body["x_delivery"] = {"throttlePerMinute": throttle}
posted = time.time()
publish_id = call("POST", "/publishes/interests", body)["publishId"]
samples = []
with open(samples_path, "w") as out:
    while True:
        status = call("GET", f"/publishes/{publish_id}")
        now = time.time()
        answered = status["apns"]["accepted"] + status["apns"]["failed"]
        sample = {"t": now, "status": status["status"], "answered": answered,
                  "eta": status.get("estimatedCompletionAt"), "rate": status.get("estimateRatePerSecond"),
                  "remaining": status.get("remainingTargets")}
        out.write(json.dumps(sample) + "\n")
        samples.append(sample)
        if status["status"] in ("finished", "failed", "cancelled", "expired"):
            break
        time.sleep(0.25)
final = samples[-1]
# The actual end: the server's own finishedAt (the moment the last result was checkpointed and the job finished).
actual = seconds(status["finishedAt"])
duration = actual - posted
kind = f"throttled {throttle}/min" if throttle else "unthrottled"
print(f"{n} devices, {kind}: {final['status']} after {duration:.1f} s (accepted {status['apns']['accepted']}), "
      f"{len(samples)} samples")
for share in (0.25, 0.50, 0.75):
    sample = next((s for s in samples if s["answered"] >= share * n and s["status"] == "running"), None)
    if sample is None:
        print(f"  {share:.0%}: no running sample past that share")
        continue
    if sample["eta"] is None:
        print(f"  {share:.0%}: no estimate in the status at {sample['answered']} answered")
        continue
    estimated = seconds(sample["eta"])
    left = actual - sample["t"]
    error = estimated - actual
    print(f"  {share:.0%} (t={sample['t'] - posted:6.1f} s, {sample['answered']} answered, rate {sample['rate']}/s, "
          f"{sample['remaining']} left): estimate {'+' if error >= 0 else ''}{error:.1f} s off "
          f"= {abs(error) / left:.1%} of the time left ({left:.1f} s), {abs(error) / duration:.1%} of the duration")
with_estimate = [s for s in samples if s["status"] == "running" and s["eta"]]
print(f"  running samples with an estimate: {len(with_estimate)} of "
      f"{sum(1 for s in samples if s['status'] == 'running')}; finished status has one: {final['eta'] is not None}")
