"""The OCI image `make image` builds (deploy/image/build.sh), run the way a container runtime would run it.

No container engine runs on the test machines, so `make test-image` unpacks the image with umoci (as a runtime's
image store does), reads the runtime configuration umoci derives from the image (arguments, user, environment,
working directory), and starts that entrypoint in namespaces of its own: a mount and PID namespace, the unpacked
root as `/`, /dev and /proc as a runtime provides them, the two volumes bind-mounted from the host, the image's
user. The network is the host's loopback, so the test reaches it on 127.0.0.1. Needs root (mounts, chroot).
"""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk"))
from harness import ROOT, free_port, start_on_free_ports, write_apns_key  # noqa: E402

LAYOUT = Path(os.environ.get("PUSH_SERVER_IMAGE", "dist/push-server-image")).resolve()
INSTANCE_ID = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
SECRET = "image-test-secret-0123456789abcdef0123"
UID = 10001

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts and chroot need root")


def run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120, **kwargs)


def blob(descriptor) -> bytes:
    algorithm, digest = descriptor["digest"].split(":")
    data = (LAYOUT / "blobs" / algorithm / digest).read_bytes()
    assert algorithm == "sha256" and hashlib.sha256(data).hexdigest() == digest, descriptor
    assert len(data) == descriptor["size"], descriptor
    return data


@pytest.fixture(scope="module")
def image():
    """(manifest, config) of the `latest` tag, every digest and size checked on the way."""
    if not (LAYOUT / "index.json").is_file():
        pytest.fail(f"no OCI image layout at {LAYOUT}: run `make test-image`, which builds it")
    assert json.loads((LAYOUT / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((LAYOUT / "index.json").read_text())
    [descriptor] = [m for m in index["manifests"]
                    if m["annotations"]["org.opencontainers.image.ref.name"] == "latest"]
    manifest = json.loads(blob(descriptor))
    assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    config = json.loads(blob(manifest["config"]))
    assert len(manifest["layers"]) == 1
    for layer in manifest["layers"]:
        assert layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
        blob(layer)
    return manifest, config


@pytest.fixture(scope="module")
def bundle(image, tmp_path_factory):
    """The image unpacked by umoci: rootfs/ and the runtime config.json umoci derives from the image config."""
    path = tmp_path_factory.mktemp("bundle") / "push-server"
    result = run("umoci", "unpack", "--image", f"{LAYOUT}:latest", path)
    assert result.returncode == 0, result.stderr
    yield path
    run("rm", "-rf", path)


def test_image_config_runs_the_server_as_a_non_root_user_with_volumes(image):
    _, config = image
    assert config["architecture"] == "amd64" and config["os"] == "linux"
    settings = config["config"]
    assert settings["User"] == f"{UID}:{UID}"
    assert settings["Entrypoint"] == ["/usr/bin/push-server", "serve", "--config", "/etc/push-server/config.json"]
    assert "Cmd" not in settings
    assert set(settings["Volumes"]) == {"/etc/push-server", "/var/lib/push-server"}
    assert set(settings["ExposedPorts"]) == {"8080/tcp", "9090/tcp"}
    assert settings["StopSignal"] == "SIGTERM"
    # Docker's health check field (the OCI config has none): the ops listener's /health, with curl from the image.
    health = settings["Healthcheck"]
    assert health["Test"][0] == "CMD" and health["Test"][1] == "curl"
    assert health["Test"][-1] == "http://127.0.0.1:9090/health"
    assert health["Interval"] == 30 * 10**9 and health["Retries"] == 3


def test_the_image_holds_only_debian_packages_and_the_binary(bundle):
    rootfs = bundle / "rootfs"
    packages = dict(line.split(" ", 1) for line in (rootfs / "usr/share/push-server/packages.txt").read_text().splitlines())
    for name in ["libcurl4", "libssl3", "libsqlite3-0", "libpq5", "ca-certificates", "curl", "libstdc++6"]:
        assert name in packages, name
    # Everything under /usr/bin except our binary belongs to a Debian package (which may list it as /bin/…: the
    # root is merged-/usr).
    listed = set()
    for path in (rootfs / "var/lib/dpkg/info").glob("*.list"):
        listed |= set(path.read_text().splitlines())
    strays = [f"/usr/bin/{p.name}" for p in (rootfs / "usr/bin").iterdir()
              if f"/usr/bin/{p.name}" not in listed and f"/bin/{p.name}" not in listed
              and not (p.is_symlink() and os.readlink(p).startswith("/etc/alternatives/"))]
    assert strays == ["/usr/bin/push-server"], strays
    assert not any((rootfs / "dev").iterdir()), "device nodes in the layer"
    passwd = (rootfs / "etc/passwd").read_text()
    assert f"push-server:x:{UID}:{UID}:" in passwd
    data = (rootfs / "var/lib/push-server").stat()
    assert (data.st_uid, data.st_gid, oct(data.st_mode & 0o777)) == (UID, UID, "0o700")
    assert (rootfs / "etc/ssl/certs/ca-certificates.crt").stat().st_size > 100_000


def test_runtime_config_umoci_derives_matches_the_image(bundle):
    spec = json.loads((bundle / "config.json").read_text())
    assert spec["process"]["args"] == ["/usr/bin/push-server", "serve", "--config", "/etc/push-server/config.json"]
    assert (spec["process"]["user"]["uid"], spec["process"]["user"]["gid"]) == (UID, UID)
    assert spec["process"]["cwd"] == "/var/lib/push-server"


class Container:
    """The image's entrypoint in its own mount and PID namespaces, rooted in the unpacked image, as its user."""

    def __init__(self, bundle: Path, volumes: dict, directory: Path, args=None, env=(), hostname=None):
        """`args` replace the image's entrypoint and `env` adds to its environment (`docker run --entrypoint`, `-e`);
        `hostname` gives the container a UTS namespace with that name (Compose's `hostname:`)."""
        spec = json.loads((bundle / "config.json").read_text())
        process = spec["process"]
        self.rootfs = bundle / "rootfs"
        for target in volumes:
            (self.rootfs / target.lstrip("/")).mkdir(parents=True, exist_ok=True)
        r = str(self.rootfs)
        mounts = ["mount --make-rprivate /", f"mount -t tmpfs -o mode=0755,nosuid tmpfs {r}/dev"]
        if hostname:
            mounts.insert(0, f"hostname {hostname}")
        for node in ["null", "zero", "full", "random", "urandom"]:
            mounts += [f"touch {r}/dev/{node}", f"mount --bind /dev/{node} {r}/dev/{node}"]
        mounts += [f"mount -t proc proc {r}/proc", f"mount -t tmpfs -o mode=1777 tmpfs {r}/tmp",
                   f"mount -t tmpfs -o mode=0755 tmpfs {r}/run"]
        for target, source in volumes.items():
            mounts += [f"mkdir -p {r}{target}", f"mount --bind {source} {r}{target}"]
        user = process["user"]
        command = ["unshare", f"--root={r}", f"--wd={process['cwd']}", "--setgid", str(user["gid"]),
                   "--setuid", str(user["uid"]), "--", "env", "-i", *process["env"], *env, *(args or process["args"])]
        script = " && ".join(mounts) + " && exec " + " ".join(f"'{arg}'" for arg in command)
        self.log = directory / "container.log"
        namespaces = ["--mount", "--pid", *(["--uts"] if hostname else [])]
        self.proc = subprocess.Popen(["unshare", *namespaces, "--fork", "--kill-child=SIGTERM", "sh", "-c", script], stdin=subprocess.DEVNULL, stdout=open(self.log, "ab"),
                                     stderr=subprocess.STDOUT)

    def server_pid(self):
        """The host pid of the server: unshare's forked child, PID 1 of the new namespace."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        assert len(children) == 1, children
        return int(children[0])

    def exec(self, *args):
        """A command inside the running container, as its user (what `docker exec` and a health check do)."""
        pid = self.server_pid()
        return run("nsenter", f"--target={pid}", "--mount", "--pid", "--root", "--wd", f"--setuid={UID}",
                   f"--setgid={UID}", "--", *args)

    def stop(self):
        """SIGTERM to the server, as `docker stop` sends the image's StopSignal to PID 1 (unshare itself ignores
        SIGTERM while it waits). Returns: the server's exit status, which unshare passes on."""
        if self.proc.poll() is None:
            os.kill(self.server_pid(), signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)


def register_and_read_back(register_base, read_base, token):
    """Registers an APNs device with `token` through the server at `register_base` and reads it back through the
    admin API of the one at `read_base` (the same server, or another node on the same database)."""
    registered = requests.post(f"{register_base}/device_api/v1/instances/{INSTANCE_ID}/devices/apns", timeout=10,
                               json={"token": token, "bundleIdentifier": "com.example.app"})
    assert registered.status_code == 200, registered.text
    device_id = registered.json()["id"]
    fetched = requests.get(f"{read_base}/admin_api/v1/instances/{INSTANCE_ID}/devices/{device_id}",
                           headers={"Authorization": f"Bearer {SECRET}"}, timeout=10)
    assert fetched.status_code == 200 and fetched.json()["id"] == device_id


def wait_healthy(box, base):
    """Raises RuntimeError when the container exits first: start_on_free_ports reads its log for a taken port."""
    deadline = time.time() + 30
    while True:
        if box.proc.poll() is not None:
            raise RuntimeError(f"the container exited: {box.log.read_text()[-3000:]}")
        try:
            if requests.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        if time.time() > deadline:
            box.stop()
            pytest.fail(f"no /health within 30 s: {box.log.read_text()[-3000:]}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def container(bundle, tmp_path_factory):
    """The container with an operator's config volume (this test's ports, an instance whose secret is a file only
    the image's user reads) and an empty data volume owned by that user."""
    directory = tmp_path_factory.mktemp("container")
    config_dir, data_dir, secrets_dir = directory / "config", directory / "data", directory / "secrets"
    for path in (config_dir, data_dir, secrets_dir):
        path.mkdir()
    sample = json.loads((bundle / "rootfs/etc/push-server/config.json").read_text())
    instance = sample["instances"][0]
    assert instance["id"] == INSTANCE_ID and instance["secretKeyFile"] == "/run/secrets/instance-secret"
    del instance["apns"]  # a registration needs no APNs key
    (secrets_dir / "instance-secret").write_text(SECRET + "\n")
    os.chown(secrets_dir / "instance-secret", UID, UID)
    os.chmod(secrets_dir / "instance-secret", 0o400)
    os.chown(data_dir, UID, UID)
    os.chmod(data_dir, 0o700)

    def start(port, ops_port):
        sample["listen"] = {"host": "127.0.0.1", "port": port}
        sample["ops"] = {"listen": f"127.0.0.1:{ops_port}"}
        (config_dir / "config.json").write_text(json.dumps(sample))
        box = Container(bundle, {"/etc/push-server": config_dir, "/var/lib/push-server": data_dir,
                                 "/run/secrets": secrets_dir}, directory)
        wait_healthy(box, f"http://127.0.0.1:{port}")
        return box

    # Ports another worker took meanwhile are replaced.
    box, (port, ops_port) = start_on_free_ports(start, directory / "container.log", [free_port(), free_port()])
    base = f"http://127.0.0.1:{port}"
    box.base, box.ops_port, box.data_dir = base, ops_port, data_dir
    yield box
    assert box.stop() == 0, box.log.read_text()[-3000:]


def test_container_serves_health_as_the_image_user(container):
    health = requests.get(f"{container.base}/health", timeout=5)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    status = Path(f"/proc/{container.server_pid()}/status").read_text()
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert fields["Uid"].split() == [str(UID)] * 4
    assert fields["Gid"].split() == [str(UID)] * 4
    assert fields["Groups"].strip() == ""
    assert fields["NSpid"].split()[-1] == "1"  # PID 1 of its namespace, as in a container


def test_the_images_health_check_command_passes_inside_the_container(container, image):
    test = image[1]["config"]["Healthcheck"]["Test"][1:]
    test[-1] = test[-1].replace(":9090/", f":{container.ops_port}/")  # this test's ops port
    result = container.exec(*test)
    assert result.returncode == 0, result.stderr
    stopped = container.exec(*test[:-1], "http://127.0.0.1:1/health")
    assert stopped.returncode != 0  # the check can fail: nothing listens there


def test_a_device_registers_and_lands_in_the_data_volume(container):
    register_and_read_back(container.base, container.base, "c0" * 32)
    database = container.data_dir / "push.sqlite"
    assert (database.stat().st_uid, database.stat().st_gid) == (UID, UID)
    assert oct(database.stat().st_mode & 0o777) == "0o600"


def test_a_crash_in_the_container_writes_every_threads_stack_to_its_log(bundle, tmp_path):
    """The image's SWIFT_BACKTRACE names the backtracer it ships: a crash of the server, PID 1 as the image's user,
    writes every thread's stack, by thread name and function, to the container's log. A fault's SIGSEGV comes back
    when the handler returns and ends the process; one sent with kill(2) does not, so the server lives on after its
    backtrace and is stopped here."""
    spec = json.loads((bundle / "config.json").read_text())
    backtrace = [value for value in spec["process"]["env"] if value.startswith("SWIFT_BACKTRACE=")]
    assert backtrace == ["SWIFT_BACKTRACE=enable=yes,interactive=no,color=no,"
                         "swift-backtrace=/usr/libexec/push-server/swift-backtrace"], spec["process"]["env"]
    config, data, secrets = tmp_path / "config", tmp_path / "data", tmp_path / "secrets"
    for path in (config, data, secrets):
        path.mkdir()
    os.chown(data, UID, UID)
    (secrets / "instance-secret").write_text(SECRET + "\n")
    os.chown(secrets / "instance-secret", UID, UID)
    sample = json.loads((bundle / "rootfs/etc/push-server/config.json").read_text())
    del sample["instances"][0]["apns"]  # as the container fixture: no APNs key needed here

    def start(port, ops_port):
        sample["listen"] = {"host": "127.0.0.1", "port": port}
        sample["ops"] = {"listen": f"127.0.0.1:{ops_port}"}
        (config / "config.json").write_text(json.dumps(sample))
        box = Container(bundle, {"/etc/push-server": config, "/var/lib/push-server": data, "/run/secrets": secrets},
                        tmp_path)
        wait_healthy(box, f"http://127.0.0.1:{port}")
        return box

    box, _ = start_on_free_ports(start, tmp_path / "container.log", [free_port(), free_port()])
    try:
        os.kill(box.server_pid(), signal.SIGSEGV)
        deadline = time.time() + 60
        while "Backtrace took" not in box.log.read_text(errors="replace"):
            assert time.time() < deadline, f"no backtrace within 60 s: {box.log.read_text(errors='replace')[-3000:]}"
            time.sleep(0.2)
        text = box.log.read_text(errors="replace")
        assert "*** Program crashed" in text and "crashed:" in text, text[-3000:]
        assert "store-writer" in text and "http-loop-" in text, text[-3000:]  # every thread, by its name
        assert "NamedThread.start" in text, text[-3000:]  # function names from the kept symbol table
    finally:
        box.stop()


def test_the_compose_files_node_config_passes_check_config_in_the_image(bundle, tmp_path):
    """ops/compose.yaml's node config, with its environment and an APNs key owned by the image's user, is what the
    image's binary accepts (`check-config` in the container, the volumes mounted as compose mounts them)."""
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    key, _ = write_apns_key(tmp_path)
    (secrets / "apns-key.p8").write_bytes(key.read_bytes())
    os.chown(secrets / "apns-key.p8", UID, UID)
    os.chmod(secrets / "apns-key.p8", 0o400)
    compose = (ROOT / "ops/compose.yaml").read_text()
    assert "- ./compose/config:/etc/push-server:ro" in compose and "- ./compose/secrets:/run/secrets:ro" in compose
    env = ["PUSH_DATABASE_URL=host=postgres dbname=push user=push password=x", f"PUSH_INSTANCE_SECRET={SECRET}"]
    args = ["/usr/bin/push-server", "check-config", "/etc/push-server/config.json"]
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    box = Container(bundle, {"/etc/push-server": ROOT / "ops/compose/config", "/run/secrets": secrets},
                    tmp_path / "with", args=args, env=env)
    assert box.proc.wait(timeout=60) == 0, box.log.read_text()
    assert "OK" in box.log.read_text()
    # The check can fail: without the instance secret in the environment it names the field.
    box = Container(bundle, {"/etc/push-server": ROOT / "ops/compose/config", "/run/secrets": secrets},
                    tmp_path / "without", args=args, env=env[:1])
    assert box.proc.wait(timeout=60) == 2
    assert "PUSH_INSTANCE_SECRET" in box.log.read_text()


def test_two_nodes_from_the_image_share_one_postgresql_database(bundle, tmp_path):
    """What ops/compose.yaml runs: two containers of the image with the Compose node config (ports changed, as both
    share this host's network here), each with its own host name, on one PostgreSQL database (a throwaway cluster,
    Tests/Support/postgresql_cluster.py). A device registered on one node is read on the other, and each node's
    /ready lists both."""
    sys.path.insert(0, str(ROOT / "Tests" / "Support"))
    import postgresql_cluster
    if not postgresql_cluster.installed():
        pytest.skip("PostgreSQL 15 is not installed (make deps-test)")
    cluster = postgresql_cluster.shared()
    url = cluster.connection_string(cluster.create_database("image"))
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    key, _ = write_apns_key(tmp_path)
    (secrets / "apns-key.p8").write_bytes(key.read_bytes())
    os.chown(secrets / "apns-key.p8", UID, UID)
    os.chmod(secrets / "apns-key.p8", 0o400)
    nodes = []
    try:
        for name in ["node1", "node2"]:
            config = json.loads((ROOT / "ops/compose/config/config.json").read_text())
            (tmp_path / name / "config").mkdir(parents=True)

            def start(port, ops_port):
                config["listen"] = {"host": "127.0.0.1", "port": port}
                config["ops"] = {"listen": f"127.0.0.1:{ops_port}"}
                (tmp_path / name / "config" / "config.json").write_text(json.dumps(config))
                box = Container(bundle, {"/etc/push-server": tmp_path / name / "config", "/run/secrets": secrets},
                                tmp_path / name, env=[f"PUSH_DATABASE_URL={url}", f"PUSH_INSTANCE_SECRET={SECRET}"],
                                hostname=name)
                box.base, box.ops = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{ops_port}"
                try:
                    wait_healthy(box, box.base)
                except BaseException:
                    box.stop()
                    raise
                return box

            # Ports another worker took meanwhile are replaced.
            box, _ = start_on_free_ports(start, tmp_path / name / "container.log", [free_port(), free_port()])
            nodes.append(box)
        first, second = nodes
        register_and_read_back(first.base, second.base, "d1" * 32)
        deadline = time.time() + 20
        while True:
            seen = [requests.get(f"{box.ops}/ready", timeout=5).json()["checks"]["nodes"] for box in nodes]
            if all(view["live"] == 2 for view in seen):
                break
            assert time.time() < deadline, seen
            time.sleep(0.5)
        assert {view["self"] for view in seen} == {"node-node1-1", "node-node2-1"}
    finally:
        statuses = [(box.stop(), box.log) for box in nodes]
    for status, log in statuses:
        assert status == 0, log.read_text()[-3000:]
