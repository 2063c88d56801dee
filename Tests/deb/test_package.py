"""The Debian package as an administrator gets it (`make test-deb`): contents and modes, control fields, lintian,
the packaged binary's libraries, its config, unit, user and maintainer scripts — all from the .deb itself."""
import datetime
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests

from conftest import ROOT, free_port, start_on_free_ports

UNIT = "lib/systemd/system/push-server.service"
# The sample config; postinst copies it to /etc/push-server/config.json when that file is absent (not a conffile).
CONFIG = "usr/share/push-server/config.json"
# The Grafana dashboard (ops/grafana/push-server.json).
DASHBOARD = "usr/share/push-server/grafana/push-server.json"
# What OPERATIONS.md sends the reader to, installed beside it.
DOCS = ["README.md", "OPERATIONS.md", "API.md", "APNS.md", "ARCHITECTURE.md", "BENCHMARKS.md", "CONSOLE.md", "SECURITY.md",
        "DATA-FORMAT.md", "MIGRATING.md"]

# Every file the package ships, with its mode; directories are 0755 except the database's.
FILES = {
    "usr/bin/push-server": "-rwxr-xr-x",
    # The Swift runtime's crash backtracer, which the unit's SWIFT_BACKTRACE names (test_unit_sandbox.py runs it).
    "usr/libexec/push-server/swift-backtrace": "-rwxr-xr-x",
    UNIT: "-rw-r--r--",
    "usr/lib/sysusers.d/push-server.conf": "-rw-r--r--",
    CONFIG: "-rw-r--r--",
    DASHBOARD: "-rw-r--r--",
    "usr/share/doc/push-server/copyright": "-rw-r--r--",
    "usr/share/doc/push-server/changelog.gz": "-rw-r--r--",
    **{f"usr/share/doc/push-server/{name}.gz": "-rw-r--r--" for name in DOCS},
    "usr/share/man/man1/push-server.1.gz": "-rw-r--r--",
    "usr/share/lintian/overrides/push-server": "-rw-r--r--",
}
STATE_DIRECTORY = "var/lib/push-server"

# The libraries the binary may link: Debian's libcurl, OpenSSL, SQLite and libpq, and the C/C++ runtime. Nothing from the
# Swift toolchain (libswiftCore, libFoundation*, libdispatch) and no libxml2 (FoundationXML).
ALLOWED_NEEDED = {"libssl.so.3", "libcrypto.so.3", "libsqlite3.so.0", "libcurl.so.4", "libpq.so.5", "libm.so.6", "libstdc++.so.6",
                  "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2"}


def run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120, **kwargs)


def contents(deb, with_sizes=False):
    """`dpkg-deb -c` as {path: (mode, owner)}, or {path: (mode, size)}."""
    entries = {}
    for line in run("dpkg-deb", "-c", deb).stdout.splitlines():
        mode, owner, size, _date, _time, path = line.split(None, 5)
        entries[path.removeprefix("./").rstrip("/")] = (mode, int(size) if with_sizes else owner)
    return entries


def test_contents_and_modes(deb):
    entries = contents(deb)
    files = {path: mode for path, (mode, _) in entries.items() if not mode.startswith("d")}
    assert files == FILES
    directories = {path: mode for path, (mode, _) in entries.items() if mode.startswith("d")}
    assert directories.pop(STATE_DIRECTORY) == "drwx------"
    assert set(directories.values()) == {"drwxr-xr-x"}
    assert {owner for _, owner in entries.values()} == {"root/root"}


def test_shipped_config_and_unit_are_the_repository_files(unpacked):
    assert (unpacked / CONFIG).read_bytes() == (ROOT / "deploy" / "config.production.json").read_bytes()
    assert (unpacked / UNIT).read_bytes() == (ROOT / "deploy" / "push-server.service").read_bytes()
    assert (unpacked / DASHBOARD).read_bytes() == (ROOT / "ops" / "grafana" / "push-server.json").read_bytes()


def test_control_fields(deb, fields, build_info):
    arch = run("dpkg", "--print-architecture").stdout.strip()
    assert fields["Package"] == "push-server"
    assert fields["Architecture"] == arch
    # One version: the binary's own, in the control file and the file name.
    assert fields["Version"] == build_info["version"]
    assert deb.name == f"push-server_{build_info['version']}_{arch}.deb"
    assert re.fullmatch(r".+ <[^@\s]+@[^@\s]+>", fields["Maintainer"])
    assert fields["Section"] and fields["Priority"] == "optional"
    assert "\n" in fields["Description"]  # a synopsis and an extended description

    alternatives = [[re.sub(r"\s*\(.*\)", "", name).strip() for name in clause.split("|")]
                    for clause in fields["Depends"].split(",")]
    names = {name for clause in alternatives for name in clause}
    # Computed by dpkg-shlibdeps from the binary: Debian's libraries, nothing from the Swift toolchain.
    assert {"libc6", "libcurl4", "libssl3", "libsqlite3-0", "libpq5"} <= names
    assert not [name for name in names if re.search(r"swift|foundation|xml|icu", name)], names
    assert ["systemd", "systemd-standalone-sysusers", "systemd-sysusers"] in alternatives


def test_installed_size_no_conffiles_and_md5sums(deb, unpacked, fields):
    # As dpkg-gencontrol counts: KiB per file rounded up, 1 per directory (the root entry "" not counted).
    entries = contents(deb, with_sizes=True)
    expected = sum(-(-size // 1024) if mode.startswith("-") else 1 for path, (mode, size) in entries.items() if path)
    assert int(fields["Installed-Size"]) == expected
    # No conffile: dpkg would ask about a changed one on upgrade, and an unattended install stops at the question.
    assert not (unpacked / "DEBIAN" / "conffiles").exists()
    sums = dict(reversed(line.split(None, 1)) for line in (unpacked / "DEBIAN" / "md5sums").read_text().splitlines())
    assert set(sums) == set(FILES)
    for path, digest in sums.items():
        assert hashlib.new("md5", (unpacked / path).read_bytes()).hexdigest() == digest, path  # dpkg's md5sums


def test_lintian_reports_nothing(deb):
    # Every remaining tag is overridden with its reason in deploy/deb/lintian-overrides; an override that no longer
    # matches would show up as a tag too. --pedantic and --display-info: not even informational tags remain. (Not
    # --show-overrides: lintian then exits 2 for an overridden error, the kept symbol table's.)
    result = run("lintian", "--pedantic", "--display-info", deb)
    tags = [line for line in result.stdout.splitlines() if re.match(r"[EWIPX]: ", line)]
    assert result.returncode == 0, result.stdout + result.stderr
    assert tags == [], "\n".join(tags)


def test_binary_links_only_debian_libraries(binary):
    ldd = run("ldd", binary)
    assert ldd.returncode == 0, ldd.stderr
    assert "/opt/swift" not in ldd.stdout and "not found" not in ldd.stdout, ldd.stdout
    dynamic = run("readelf", "-d", binary).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic))
    assert needed and needed <= ALLOWED_NEEDED, needed - ALLOWED_NEEDED
    assert "RPATH" not in dynamic and "RUNPATH" not in dynamic  # no $ORIGIN or toolchain search path
    assert "BIND_NOW" in dynamic or re.search(r"\(FLAGS_1\).*\bNOW\b", dynamic)  # full RELRO


def test_version_names_the_commit_and_build_date(unpacked, build_info):
    head = run("git", "rev-parse", "--short=12", "HEAD", cwd=ROOT).stdout.strip()
    assert build_info["commit"].removesuffix("-dirty") == head
    datetime.datetime.strptime(build_info["built"], "%Y-%m-%dT%H:%M:%SZ")


def test_changelog_holds_the_release_notes_and_the_packages_version(unpacked, build_info):
    # deploy/deb/changelog as it is when the version is a release's; a build with another VERSION gets an entry of its
    # own on top naming the commit. dpkg-parsechangelog reads it (a valid Debian changelog).
    changelog = run("zcat", unpacked / "usr/share/doc/push-server/changelog.gz").stdout
    notes = (ROOT / "deploy/deb/changelog").read_text()
    parsed = run("dpkg-parsechangelog", "-l", "-", "--all", "--format", "rfc822", input=changelog)
    assert parsed.returncode == 0 and not parsed.stderr, parsed.stderr
    entries = re.findall(r"^Version: (.+)$", parsed.stdout, re.M)
    assert entries[0] == build_info["version"]
    assert {"0.1.0", "0.2.0"} <= set(entries)
    if changelog != notes:
        assert changelog.endswith(notes) and f"commit {build_info['commit']}," in changelog.removesuffix(notes)


def test_build_info_carries_the_version_it_is_given(tmp_path):
    # `make deb VERSION=…` sets the version without editing a source: deploy/build-info.sh links it in.
    out = tmp_path / "build-info.o"
    result = run("bash", ROOT / "deploy/build-info.sh", out, env={**os.environ, "VERSION": "9.8.7~rc1"})
    assert result.returncode == 0, result.stderr
    assert "9.8.7~rc1" in run("strings", out).stdout.split()
    refused = run("bash", ROOT / "deploy/build-info.sh", out, env={**os.environ, "VERSION": "v9 beta"})
    assert refused.returncode != 0 and "not a Debian version" in refused.stderr


def loaded_credentials(unit_text):
    return {line.split("=", 1)[1].split(":", 1)[0] for line in unit_text.splitlines()
            if line.startswith("LoadCredential=")}


def test_config_uses_only_credentials_the_unit_loads(unpacked):
    referenced = set(re.findall(r"\$\{CREDENTIALS_DIRECTORY\}/([\w.-]+)", (unpacked / CONFIG).read_text()))
    assert referenced and referenced <= loaded_credentials((unpacked / UNIT).read_text())


def test_packaged_config_passes_check_config_with_the_credentials(unpacked, binary, credentials):
    result = run(binary, "check-config", unpacked / CONFIG, env={"CREDENTIALS_DIRECTORY": str(credentials)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"OK: {unpacked / CONFIG} (1 instance)")


def test_packaged_config_without_credentials_names_each_missing_file(unpacked, binary, tmp_path):
    result = run(binary, "check-config", unpacked / CONFIG, env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert result.returncode == 2
    for field in ["listen.tls.certificatePath", "listen.tls.privateKeyPath", "instances[0].secretKeyFile",
                  "instances[0].apns.keyPath"]:
        assert field in result.stderr, field


def test_check_config_by_hand_explains_that_systemd_sets_the_credentials_directory(unpacked, binary):
    # Outside the unit nothing sets $CREDENTIALS_DIRECTORY: each field says so instead of "/tls-cert.pem not found".
    result = run(binary, "check-config", unpacked / CONFIG, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    for field, name in [("listen.tls.certificatePath", "tls-cert.pem"), ("listen.tls.privateKeyPath", "tls-key.pem"),
                        ("instances[0].secretKeyFile", "instance-secret"),
                        ("instances[0].apns.keyPath", "apns-key.p8")]:
        assert f'{field}: ${{CREDENTIALS_DIRECTORY}} is not set (the path would be "/{name}")' in result.stderr
    assert "not found" not in result.stderr
    assert "CREDENTIALS_DIRECTORY is set by systemd, and only for the service" in result.stderr
    assert "CREDENTIALS_DIRECTORY=/run/credentials/push-server.service" in result.stderr


def test_man_page_covers_every_command_platform_and_backend(unpacked, binary):
    page_path = unpacked / "usr/share/man/man1/push-server.1.gz"
    page = run("man", "-l", page_path, env={"MANWIDTH": "200", "PATH": "/usr/bin:/bin"})
    assert page.returncode == 0, page.stderr
    text = page.stdout
    usage = run(binary, "--help").stdout
    commands = re.findall(r"^  ([a-z][a-z-]+)\b", usage.split("Commands:")[1], re.M)
    assert {"serve", "check-config", "token", "send", "vapid-keygen", "version"} <= set(commands)
    sections = text.split("COMMANDS")[1].split("EXIT STATUS")[0]
    for command in commands:
        assert f"push-server {command}" in text.split("DESCRIPTION")[0], command  # in the synopsis
        assert re.search(rf"^ {{7}}{re.escape(command)}(\s|$)", sections, re.M), command  # and described
    for word in ["APNs", "Firebase Cloud Messaging", "Web Push", "sqlite", "postgresql"]:
        assert word in text, word
    lint = run("man", "--warnings", "-l", page_path, env={"PATH": "/usr/bin:/bin"})
    assert lint.stderr == "", lint.stderr


def test_every_document_operations_md_names_is_installed(unpacked):
    named = set(re.findall(r"\b([A-Z][A-Z_-]*\.md)\b", (ROOT / "docs/OPERATIONS.md").read_text()))
    assert {"API.md", "APNS.md", "BENCHMARKS.md", "CONSOLE.md", "SECURITY.md"} <= named
    installed = {path.name.removesuffix(".gz") for path in (unpacked / "usr/share/doc/push-server").glob("*.md.gz")}
    assert named <= installed, named - installed
    for name in installed:
        source = ROOT / ("README.md" if name == "README.md" else f"docs/{name}")
        assert run("zcat", unpacked / f"usr/share/doc/push-server/{name}.gz").stdout == source.read_text(), name


def test_copyright_is_machine_readable_apache_2_0(unpacked):
    text = (unpacked / "usr/share/doc/push-server/copyright").read_text()
    assert text.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
    assert re.search(r"^Files: \*\nCopyright: .+\nLicense: Apache-2\.0$", text, re.M)
    assert "/usr/share/common-licenses/Apache-2.0" in text
    assert (ROOT / "LICENSE").read_text() == Path("/usr/share/common-licenses/Apache-2.0").read_text()
    assert "// SPDX-License-Identifier: Apache-2.0\n" in (ROOT / "Package.swift").read_text()


def test_packaged_binary_serves_health_and_build_info(unpacked, binary, build_info, credentials, tmp_path):
    # The shipped config with only the listeners (free loopback ports) and the database file moved.
    config = json.loads((unpacked / CONFIG).read_text())
    config["listen"]["host"] = "127.0.0.1"
    assert config["ops"]["listen"].startswith("127.0.0.1:"), "the shipped config keeps metrics on loopback"
    config["storage"]["path"] = str(tmp_path / "push.sqlite")
    config_path = tmp_path / "config.json"

    # Started as systemd would (Type=notify): READY=1 on $NOTIFY_SOCKET says it serves.
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.settimeout(0.5)
    log = tmp_path / "server.log"

    def start(port, ops_port):
        config["listen"]["port"], config["ops"]["listen"] = port, f"127.0.0.1:{ops_port}"
        config_path.write_text(json.dumps(config))
        proc = subprocess.Popen([str(binary), "serve", "--config", str(config_path)], cwd=tmp_path,
                                env={"CREDENTIALS_DIRECTORY": str(credentials),
                                     "NOTIFY_SOCKET": str(tmp_path / "notify")},
                                stdin=subprocess.DEVNULL, stderr=open(log, "ab"))
        deadline = time.monotonic() + 30
        while True:
            try:
                if "READY=1" in notify.recv(4096).decode():
                    return proc
            except TimeoutError:
                # Its port taken meanwhile (start_on_free_ports reads the log and tries others), or a failure.
                if proc.poll() is not None:
                    raise RuntimeError(f"serve exited: {log.read_text()[-2000:]}")
                assert time.monotonic() < deadline, f"no READY=1 within 30 s: {log.read_text()[-2000:]}"

    proc, (port, ops_port) = start_on_free_ports(start, log, [free_port(), free_port()])
    try:
        base, ca = f"https://127.0.0.1:{port}", str(credentials / "tls-cert.pem")
        health = requests.get(f"{base}/health", verify=ca, timeout=5)
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "version": build_info["version"], "commit": build_info["commit"]}
        # The internet-facing listener never serves metrics; the ops listener (plain HTTP, loopback) does.
        assert requests.get(f"{base}/metrics", verify=ca, timeout=5).status_code == 403
        metrics = requests.get(f"http://127.0.0.1:{ops_port}/metrics", timeout=5).text
        expected = f'push_server_build_info{{version="{build_info["version"]}",commit="{build_info["commit"]}"}} 1'
        assert expected in metrics.splitlines()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()
    assert (tmp_path / "push.sqlite").exists()


def test_unit_passes_systemd_analyze_verify(unpacked, tmp_path):
    # The unpacked tree is not /, so the unit's /usr/bin/push-server is pointed at the unpacked binary, and
    # man(1) finds the packaged page for Documentation=man:push-server(1).
    unit = (unpacked / UNIT).read_text().replace("/usr/bin/push-server", str(unpacked / "usr/bin/push-server"))
    path = tmp_path / "push-server.service"
    path.write_text(unit)
    result = run("systemd-analyze", "verify", path, env={"MANPATH": f"{unpacked}/usr/share/man:", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_sysusers_creates_the_system_user_the_unit_runs_as(unpacked, tmp_path):
    (tmp_path / "etc").mkdir()
    for name in ["passwd", "group", "shadow", "gshadow"]:
        (tmp_path / "etc" / name).touch()
    conf = unpacked / "usr/lib/sysusers.d/push-server.conf"
    result = run("systemd-sysusers", f"--root={tmp_path}", conf)
    assert result.returncode == 0, result.stderr
    name, _, uid, gid, _gecos, home, shell = (tmp_path / "etc/passwd").read_text().strip().split(":")
    assert (name, home, shell) == ("push-server", "/" + STATE_DIRECTORY, "/usr/sbin/nologin")
    assert int(uid) < 1000 and f"push-server:x:{gid}:" in (tmp_path / "etc/group").read_text()
    settings = [line for line in (unpacked / UNIT).read_text().splitlines() if not line.startswith("#")]
    assert "User=push-server" in settings and "Group=push-server" in settings
    assert not [line for line in settings if line.startswith("DynamicUser=")]


class Scripts:
    """The package's maintainer scripts run against logging stand-ins for the commands they call, so their decisions
    (enable, start, restart, stop) show without touching this machine. The only change to the scripts: the test
    for a systemd-booted machine (/run/systemd/system), deb-systemd-helper's location, /etc/push-server and the
    sample's /usr/share/push-server point into `tmp`."""

    COMMANDS = ["systemd-sysusers", "deb-systemd-helper", "deb-systemd-invoke", "systemctl", "dpkg-statoverride",
                "chown", "chmod"]

    def __init__(self, unpacked: Path, tmp: Path):
        self.tmp, self.log = tmp, tmp / "calls.log"
        self.booted = tmp / "run-systemd-system"
        stubs = tmp / "bin"
        stubs.mkdir()
        for command in self.COMMANDS:
            stub = stubs / command
            # Exit codes: was-enabled per $WAS_ENABLED, dpkg-statoverride per $STATOVERRIDE; everything else 0.
            stub.write_text('#!/bin/sh\necho "${0##*/} $*" >> "$CALLS"\n'
                            'case "${0##*/} $*" in\n'
                            '  "deb-systemd-helper --quiet was-enabled "*) exit "${WAS_ENABLED:-0}" ;;\n'
                            '  "dpkg-statoverride --list "*) exit "${STATOVERRIDE:-1}" ;;\n'
                            'esac\n')
            stub.chmod(0o755)
        self.path = f"{stubs}:/usr/bin:/bin"
        self.etc = tmp / "etc-push-server"
        self.etc.mkdir()
        self.sample = (unpacked / CONFIG).read_text()
        (tmp / "usr-share-push-server").mkdir()
        (tmp / "usr-share-push-server" / "config.json").write_text(self.sample)
        for script in ["postinst", "prerm", "postrm"]:
            text = (unpacked / "DEBIAN" / script).read_text()
            text = text.replace("/run/systemd/system", str(self.booted))
            text = text.replace("/usr/bin/deb-systemd-helper", str(stubs / "deb-systemd-helper"))
            text = text.replace("/etc/push-server", str(self.etc))
            text = text.replace("/usr/share/push-server", str(tmp / "usr-share-push-server"))
            (tmp / script).write_text(text)

    def __call__(self, script, *args, booted=True, **env):
        if booted:
            self.booted.mkdir(exist_ok=True)
        elif self.booted.exists():
            self.booted.rmdir()
        self.log.write_text("")
        result = run("sh", self.tmp / script, *args, env={"PATH": self.path, "CALLS": str(self.log), **env})
        assert result.returncode == 0, result.stderr
        return self.log.read_text().splitlines()


def test_maintainer_scripts_are_valid_sh(unpacked):
    for script in ["postinst", "prerm", "postrm"]:
        path = unpacked / "DEBIAN" / script
        assert path.stat().st_mode & 0o777 == 0o755
        assert run("sh", "-n", path).returncode == 0, script


def test_first_install_creates_user_and_enables_but_does_not_start(unpacked, tmp_path):
    scripts = Scripts(unpacked, tmp_path)
    assert scripts("postinst", "configure") == [
        "systemd-sysusers push-server.conf",
        "dpkg-statoverride --list /var/lib/push-server",
        "chown push-server:push-server /var/lib/push-server",
        "chmod 0700 /var/lib/push-server",
        "deb-systemd-helper unmask push-server.service",
        "deb-systemd-helper --quiet was-enabled push-server.service",
        "deb-systemd-helper enable push-server.service",
        "systemctl --system daemon-reload",
    ]


def test_first_install_puts_the_sample_config_in_place_and_upgrades_never_touch_it(unpacked, tmp_path):
    scripts = Scripts(unpacked, tmp_path)
    config = scripts.etc / "config.json"
    scripts("postinst", "configure")
    assert config.read_text() == scripts.sample and config.stat().st_mode & 0o777 == 0o644
    # The administrator's file survives every upgrade (the sample may have changed) and a reinstall.
    config.write_text('{"instances": []}\n')
    scripts("postinst", "configure", "0.1.0")
    assert config.read_text() == '{"instances": []}\n'
    # Deleted by the administrator: the next configure brings the sample back.
    config.unlink()
    scripts("postinst", "configure", "0.1.0")
    assert config.read_text() == scripts.sample
    # Purge removes it (dpkg does not: it is no conffile); remove keeps it.
    scripts("postrm", "remove")
    assert config.exists()
    (scripts.etc / "instance-secret").write_text("secret\n")
    scripts("postrm", "purge")
    assert not config.exists() and (scripts.etc / "instance-secret").exists()


def test_upgrade_restarts_a_running_service_only(unpacked, tmp_path):
    scripts = Scripts(unpacked, tmp_path)
    calls = scripts("postinst", "configure", "0.0.9")
    assert calls[-2:] == ["systemctl --system daemon-reload", "deb-systemd-invoke try-restart push-server.service"]
    assert not [call for call in calls if re.match(r"deb-systemd-invoke (start|restart) ", call)]
    # The old package's prerm on upgrade leaves the service running until the new postinst restarts it.
    assert scripts("prerm", "upgrade", "0.1.1") == []


def test_upgrade_keeps_an_administrators_choices(unpacked, tmp_path):
    scripts = Scripts(unpacked, tmp_path)
    # Disabled by the administrator: only the state file is updated. A dpkg-statoverride on the directory wins.
    calls = scripts("postinst", "configure", "0.0.9", WAS_ENABLED="1", STATOVERRIDE="0")
    assert "deb-systemd-helper update-state push-server.service" in calls
    assert "deb-systemd-helper enable push-server.service" not in calls
    assert not [call for call in calls if call.startswith(("chown", "chmod"))]


def test_install_without_systemd_running_touches_no_service(unpacked, tmp_path):
    scripts = Scripts(unpacked, tmp_path)
    calls = scripts("postinst", "configure", "0.0.9", booted=False)
    assert not [call for call in calls if call.startswith(("systemctl", "deb-systemd-invoke"))]
    assert "deb-systemd-helper enable push-server.service" in calls  # enabled for the next boot all the same


def test_remove_stops_and_purge_forgets_the_unit(unpacked, tmp_path):
    scripts = Scripts(unpacked, tmp_path)
    assert scripts("prerm", "remove") == ["deb-systemd-invoke stop push-server.service"]
    assert scripts("postrm", "remove") == ["systemctl --system daemon-reload"]
    assert scripts("postrm", "purge") == ["deb-systemd-helper purge push-server.service"]
