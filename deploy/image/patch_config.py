#!/usr/bin/env python3
"""Finishes the image umoci made (deploy/image/build.sh runs it): Docker's `Healthcheck` in the config, and the
manifest's `mediaType`, which umoci 0.4 leaves out (optional in OCI image-spec 1.0, expected since 1.1).

    patch_config.py LAYOUT TAG

The OCI image config has no health check field; Docker's image config, the same JSON with more fields, has
`config.Healthcheck` (durations in nanoseconds). Docker reads it when it loads the image; OCI tools (umoci,
podman with an OCI image) ignore it, which the OCI image specification allows for unknown fields. umoci cannot set
it, so the config blob is rewritten here and the manifest and index that name it by digest are updated in turn.
The old blobs stay until `umoci gc`.
"""
import hashlib
import json
import sys
from pathlib import Path

SECOND = 1_000_000_000
# The ops listener (plain HTTP, deploy/image/config.json's ops.listen) answers /health whatever the main listener
# does (TLS or not); curl is in the image for this.
HEALTHCHECK = {
    "Test": ["CMD", "curl", "--fail", "--silent", "--show-error", "--max-time", "4", "--output", "/dev/null",
             "http://127.0.0.1:9090/health"],
    "Interval": 30 * SECOND, "Timeout": 5 * SECOND, "StartPeriod": 20 * SECOND, "Retries": 3,
}


def blob(layout: Path, descriptor):
    algorithm, digest = descriptor["digest"].split(":")
    return layout / "blobs" / algorithm / digest


def store(layout: Path, data: bytes, descriptor):
    """Writes `data` as a blob and points `descriptor` at it."""
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    descriptor["digest"], descriptor["size"] = f"sha256:{digest}", len(data)


def main(layout: Path, tag: str):
    index = json.loads((layout / "index.json").read_text())
    [manifest_descriptor] = [m for m in index["manifests"]
                             if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
    manifest = json.loads(blob(layout, manifest_descriptor).read_bytes())
    config = json.loads(blob(layout, manifest["config"]).read_bytes())
    config.setdefault("config", {})["Healthcheck"] = HEALTHCHECK
    store(layout, json.dumps(config, separators=(",", ":")).encode(), manifest["config"])
    manifest = {"schemaVersion": manifest["schemaVersion"], "mediaType": manifest_descriptor["mediaType"],
                **{key: value for key, value in manifest.items() if key != "schemaVersion"}}
    store(layout, json.dumps(manifest, separators=(",", ":")).encode(), manifest_descriptor)
    (layout / "index.json").write_text(json.dumps(index, separators=(",", ":")))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
