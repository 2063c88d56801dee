#!/usr/bin/env python3
"""Runs one command of a systemd service unit the way systemd 252 would start it, without systemd: the unit's
user and group, umask, credentials, state directory, working directory and environment (Environment=), its
LimitNICE=, its capability bounding set and no-new-privileges, and every seccomp filter the unit asks for
(SystemCallFilter= with SystemCallErrorNumber=, SystemCallArchitectures=, RestrictAddressFamilies=, MemoryDenyWriteExecute=,
RestrictNamespaces=, LockPersonality=), loaded through Debian's libseccomp. Then it execs the command, so the
caller's child *is* the service process (its signals, exit status and READY=1 are the service's).

    unit_sandbox.py UNIT --command ExecStart --user nobody --group nogroup \
        --map /usr/bin/push-server=/srv/test/push-server --map /var/lib/push-server=/srv/test/state \
        --credentials-from DIR --runtime-directory DIR [--notify-socket PATH] [--drop-in FILE]

The system-call sets (@system-service, @resources, …) are expanded by `systemd-analyze syscall-filter` from the
systemd installed here, so the filter is the one that systemd would build from the same unit text. Mount
namespacing (ProtectSystem=, PrivateTmp=, PrivateDevices=, …) is not reproduced: `systemd-analyze verify` checks
those settings, and the server writes only under its StateDirectory=.

Must run as root (it changes user). Used by Tests/deb/test_unit_sandbox.py; docs/OPERATIONS.md ("The unit").
"""
import argparse
import ctypes
import ctypes.util
import errno
import grp
import os
import pwd
import resource
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

# libseccomp's constants (seccomp.h).
SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_FLTATR_ACT_BADARCH = 2
SCMP_CMP_NE = 1
SCMP_CMP_EQ = 4
SCMP_CMP_MASKED_EQ = 7

PROT_WRITE, PROT_EXEC = 0x2, 0x4
SHM_EXEC = 0o100000
CLONE_NEW_FLAGS = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
AF_MAX = 46  # linux/socket.h (AF_MCTP is 45)
ADDRESS_FAMILIES = {"AF_UNIX": 1, "AF_LOCAL": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17}


def SCMP_ACT_ERRNO(number):  # noqa: N802 (libseccomp's macro)
    return 0x00050000 | (number & 0xFFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_uint), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class Seccomp:
    """A filter built with libseccomp (Debian's libseccomp2), loaded into this process."""

    lib = None

    def __init__(self, default_action, architectures):
        if Seccomp.lib is None:
            Seccomp.lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
            lib = Seccomp.lib
            lib.seccomp_init.restype = ctypes.c_void_p
            lib.seccomp_init.argtypes = [ctypes.c_uint32]
            lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
            lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
            lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
            lib.seccomp_arch_native.restype = ctypes.c_uint32
            for name in ["seccomp_arch_add", "seccomp_arch_remove"]:
                getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_uint32]
            lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
            lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                                   ctypes.POINTER(ArgCmp)]
            lib.seccomp_load.argtypes = [ctypes.c_void_p]
        self.ctx = self.lib.seccomp_init(default_action)
        if not self.ctx:
            raise OSError("seccomp_init failed")
        native = self.lib.seccomp_arch_native()
        tokens = {native if name == "native" else self.lib.seccomp_arch_resolve_name(name.replace("-", "_").encode())
                  for name in architectures}
        if 0 in tokens:
            raise ValueError(f"unknown architecture in {architectures}")
        for token in tokens - {native}:
            self.check(self.lib.seccomp_arch_add(self.ctx, token), "seccomp_arch_add")
        if native not in tokens:
            self.check(self.lib.seccomp_arch_remove(self.ctx, native), "seccomp_arch_remove")

    @staticmethod
    def check(result, what):
        if result < 0:
            raise OSError(-result, f"{what}: {os.strerror(-result)}")

    def set_bad_arch_action(self, action):
        self.check(self.lib.seccomp_attr_set(self.ctx, SCMP_FLTATR_ACT_BADARCH, action), "seccomp_attr_set")

    def number(self, name):
        """The system call's number here, or None where it does not exist (systemd skips those too)."""
        number = self.lib.seccomp_syscall_resolve_name(name.encode())
        return number if number >= 0 else None

    def rule(self, action, name, *conditions):
        number = self.number(name)
        if number is None:
            return
        array = (ArgCmp * max(len(conditions), 1))(*[ArgCmp(*c) for c in conditions])
        self.check(self.lib.seccomp_rule_add_array(self.ctx, action, number, len(conditions), array),
                   f"seccomp_rule_add({name})")

    def load(self):
        self.check(self.lib.seccomp_load(self.ctx), "seccomp_load")


def parse_unit(texts):
    """[Service] settings of the unit and its drop-ins, in order: {key: [value, …]} (systemd's line syntax:
    comments, continuation lines)."""
    settings, section = {}, None
    for text in texts:
        lines = iter(text.splitlines())
        for line in lines:
            line = line.strip()
            while line.endswith("\\"):
                line = line[:-1] + " " + next(lines, "").strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            if section == "Service":
                key, _, value = line.partition("=")
                settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def last(settings, key, default=None):
    values = settings.get(key)
    return values[-1] if values else default


def boolean(settings, key):
    return last(settings, key, "no").lower() in {"yes", "true", "on", "1"}


def nice_limit(value):
    """RLIMIT_NICE for LimitNICE= (systemd.exec): `+N`/`-N` is a nice value, the limit 20 - N; a bare number is the
    limit itself (0 counts as 1)."""
    if value[:1] in "+-":
        nice = int(value)
        if not -20 <= nice <= 19:
            raise ValueError(f"LimitNICE={value}: a nice value is -20…19")
        return 20 - nice
    return max(1, int(value))


_SETS = {}


def syscall_sets():
    """{"@set": [entry, …]} as this systemd defines them (`systemd-analyze syscall-filter`, read once)."""
    if not _SETS:
        out = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"], capture_output=True, text=True,
                             check=True).stdout
        current = None
        for line in out.splitlines():
            if line.startswith("@"):
                current = _SETS.setdefault(line.strip(), [])
            elif not line.startswith(" "):
                current = None  # the trailing "# Ungrouped …" notes
            elif current is not None and not line.strip().startswith("#"):
                current.append(line.strip())
    return _SETS


def expand_set(name, seen=None):
    """A system call, or an @set expanded (nested sets included)."""
    if not name.startswith("@"):
        return {name}
    seen = seen if seen is not None else set()
    if name in seen:
        return set()
    seen.add(name)
    if name not in syscall_sets():
        raise ValueError(f"systemd knows no system-call set {name}")
    return set().union(*(expand_set(entry, seen) for entry in syscall_sets()[name]))


def syscall_filter(settings):
    """systemd's reading of SystemCallFilter= (systemd.exec(5)): the first non-empty assignment decides between an
    allow list (which always includes @default) and a deny list; later ones add to or remove from it; an empty one
    resets. Returns (allow_list, names) or None."""
    allow_list, names = None, set()
    for value in settings.get("SystemCallFilter", []):
        if not value:
            allow_list, names = None, set()
            continue
        invert = value.startswith("~")
        entries = value.lstrip("~").split()
        if any(":" in entry for entry in entries):
            raise ValueError(f"per-call error numbers are not supported here: {value}")
        calls = set().union(*(expand_set(entry) for entry in entries))
        if allow_list is None:
            allow_list = not invert
            names = calls | (expand_set("@default") if allow_list else set())
        elif invert == allow_list:  # "~" on an allow list, or a plain entry on a deny list: removed
            names -= calls
        else:
            names |= calls
    return None if allow_list is None else (allow_list, names)


def error_number(value):
    if value.isdigit():
        return int(value)
    number = getattr(errno, value, None)
    if number is None:
        raise ValueError(f"unknown errno name {value}")
    return number


def load_filters(settings):
    architectures = (last(settings, "SystemCallArchitectures") or "native").split()
    if last(settings, "SystemCallArchitectures"):
        # Any other ABI (i386's int 0x80, x32) kills the process, as systemd's seccomp_restrict_archs() does.
        restrict = Seccomp(SCMP_ACT_ALLOW, architectures)
        restrict.set_bad_arch_action(SCMP_ACT_KILL_PROCESS)
        restrict.load()

    def filter_for(default_action):
        f = Seccomp(default_action, architectures)
        f.set_bad_arch_action(SCMP_ACT_ALLOW)  # left to the architecture filter above, as systemd does
        return f

    families = last(settings, "RestrictAddressFamilies")
    if families:
        invert = families.startswith("~")
        listed = {ADDRESS_FAMILIES[name] for name in families.lstrip("~").split()}
        f = filter_for(SCMP_ACT_ALLOW)
        for family in range(AF_MAX):
            if (family in listed) == invert:
                f.rule(SCMP_ACT_ERRNO(errno.EAFNOSUPPORT), "socket", (0, SCMP_CMP_EQ, family, 0))
        f.load()

    if boolean(settings, "MemoryDenyWriteExecute"):
        f = filter_for(SCMP_ACT_ALLOW)
        wx = PROT_WRITE | PROT_EXEC
        f.rule(SCMP_ACT_ERRNO(errno.EPERM), "mmap", (2, SCMP_CMP_MASKED_EQ, wx, wx))
        f.rule(SCMP_ACT_ERRNO(errno.EPERM), "mprotect", (2, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC))
        f.rule(SCMP_ACT_ERRNO(errno.EPERM), "pkey_mprotect", (2, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC))
        f.rule(SCMP_ACT_ERRNO(errno.EPERM), "shmat", (2, SCMP_CMP_MASKED_EQ, SHM_EXEC, SHM_EXEC))
        f.load()

    if boolean(settings, "RestrictNamespaces"):
        # No namespace at all: clone/unshare with any CLONE_NEW* flag and setns are refused; clone3 (whose flags sit
        # in memory a filter cannot read) answers ENOSYS so that glibc falls back to clone.
        f = filter_for(SCMP_ACT_ALLOW)
        f.rule(SCMP_ACT_ERRNO(errno.ENOSYS), "clone3")
        for bit in range(32):
            if CLONE_NEW_FLAGS & (1 << bit):
                f.rule(SCMP_ACT_ERRNO(errno.EPERM), "clone", (0, SCMP_CMP_MASKED_EQ, 1 << bit, 1 << bit))
                f.rule(SCMP_ACT_ERRNO(errno.EPERM), "unshare", (0, SCMP_CMP_MASKED_EQ, 1 << bit, 1 << bit))
        f.rule(SCMP_ACT_ERRNO(errno.EPERM), "setns")
        f.load()

    if boolean(settings, "LockPersonality"):
        # personality() may only name the current one, PER_LINUX (systemd's seccomp_lock_personality()).
        f = filter_for(SCMP_ACT_ALLOW)
        f.rule(SCMP_ACT_ERRNO(errno.EPERM), "personality", (0, SCMP_CMP_NE, 0, 0))
        f.load()

    # The system-call filter last, as systemd loads it: the filters above need seccomp(2), which it may refuse.
    calls = syscall_filter(settings)
    if calls is not None:
        allow_list, names = calls
        errno_value = last(settings, "SystemCallErrorNumber")
        refuse = SCMP_ACT_ERRNO(error_number(errno_value)) if errno_value else SCMP_ACT_KILL_PROCESS
        f = filter_for(refuse if allow_list else SCMP_ACT_ALLOW)
        for name in sorted(names):
            f.rule(SCMP_ACT_ALLOW if allow_list else refuse, name)
        f.load()


def mapped(path, maps):
    for source, target in maps:
        if path == source or path.startswith(source.rstrip("/") + "/"):
            return target + path[len(source):]
    return path


def environment(settings, maps):
    """Environment= as systemd reads it: space-separated KEY=VALUE words (quotes group a word), later assignments
    win, an empty assignment resets the list. A path the unit names inside a value is mapped like the command's
    words (`--map`), wherever it stands in the value (`…,swift-backtrace=/usr/libexec/…`)."""
    pairs = {}
    for value in settings.get("Environment", []):
        if not value:
            pairs = {}
            continue
        if "%" in value or "$" in value:
            raise ValueError(f"Environment={value}: specifiers and variables are not supported here")
        for word in shlex.split(value):
            key, separator, setting = word.partition("=")
            if not separator or not key:
                raise ValueError(f"Environment={value}: {word!r} is not KEY=VALUE")
            for source, target in maps:
                setting = setting.replace(source, target)
            pairs[key] = setting
    return pairs


def command_line(settings, key, maps):
    values = []
    for value in settings.get(key, []):
        values = values + [value] if value else []  # an empty assignment resets the list
    if len(values) != 1:
        raise ValueError(f"{key}= has {len(values)} command lines; this runner starts exactly one")
    value = values[0]
    if value[:1] in "-@+!:" or "%" in value or "$" in value:
        raise ValueError(f"{key}={value}: prefixes, specifiers and variables are not supported here")
    return [mapped(word, maps) for word in shlex.split(value)]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("unit", type=Path)
    parser.add_argument("--drop-in", type=Path, action="append", default=[],
                        help="a drop-in's text, applied after the unit")
    parser.add_argument("--command", required=True, help="the setting whose command runs: ExecStartPre, ExecStart, …")
    parser.add_argument("--user", help="the account that stands in for User= (when that user does not exist here)")
    parser.add_argument("--group", help="the group that stands in for Group=")
    parser.add_argument("--map", action="append", default=[], metavar="UNIT_PATH=PATH",
                        help="where a path the unit names lives on this machine")
    parser.add_argument("--credentials-from", type=Path, help="a directory with one file per LoadCredential= id")
    parser.add_argument("--runtime-directory", type=Path, required=True,
                        help="where the credentials directory is made (systemd: /run/credentials/UNIT)")
    parser.add_argument("--notify-socket", help="$NOTIFY_SOCKET for the main process (Type=notify)")
    args = parser.parse_args(argv)

    settings = parse_unit([args.unit.read_text()] + [p.read_text() for p in args.drop_in])
    maps = [tuple(m.split("=", 1)) for m in args.map]
    argv_ = command_line(settings, args.command, maps)

    user = pwd.getpwnam(args.user or last(settings, "User", "root"))
    group = grp.getgrnam(args.group or last(settings, "Group") or grp.getgrgid(user.pw_gid).gr_name)
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
           "USER": user.pw_name, "LOGNAME": user.pw_name, "HOME": user.pw_dir, "SHELL": user.pw_shell,
           "INVOCATION_ID": os.urandom(16).hex(), "SYSTEMD_EXEC_PID": str(os.getpid())}
    env.update(environment(settings, maps))

    # LoadCredential=ID:PATH: copied into a directory only the service user can read (systemd: a ramfs at
    # /run/credentials/UNIT, 0500, files 0400). A missing source fails the start (status 243/CREDENTIALS).
    loaded = [value.split(":", 1)[0] for value in settings.get("LoadCredential", []) if value]
    if loaded:
        directory = args.runtime_directory / "credentials"
        directory.mkdir(parents=True)
        for name in loaded:
            source = (args.credentials_from or Path("/nonexistent")) / name
            if not source.is_file():
                print(f"unit_sandbox: credential {name}: {source} missing (status 243/CREDENTIALS)", file=sys.stderr)
                return 243
            shutil.copyfile(source, directory / name)
            os.chown(directory / name, user.pw_uid, group.gr_gid)
            os.chmod(directory / name, 0o400)
        os.chown(directory, user.pw_uid, group.gr_gid)
        os.chmod(directory, 0o500)
        env["CREDENTIALS_DIRECTORY"] = str(directory)

    # StateDirectory=: created (parents root-owned 0755), handed to the user, with StateDirectoryMode=.
    states = " ".join(settings.get("StateDirectory", [])).split()
    if states:
        mode = int(last(settings, "StateDirectoryMode", "0755"), 8)
        paths = [mapped("/var/lib/" + name, maps) for name in states]
        for path in paths:
            os.makedirs(path, exist_ok=True)
            os.chown(path, user.pw_uid, group.gr_gid)
            os.chmod(path, mode)
        env["STATE_DIRECTORY"] = ":".join(paths)

    if args.command == "ExecStart" and last(settings, "Type") == "notify" and args.notify_socket:
        env["NOTIFY_SOCKET"] = args.notify_socket
        watchdog = last(settings, "WatchdogSec")
        if watchdog:
            seconds = float(watchdog.removesuffix("s"))
            env["WATCHDOG_USEC"], env["WATCHDOG_PID"] = str(int(seconds * 1_000_000)), str(os.getpid())

    working = last(settings, "WorkingDirectory")
    os.chdir(mapped(working, maps) if working else user.pw_dir if os.path.isdir(user.pw_dir) else "/")

    # Capabilities: the bounding set as CapabilityBoundingSet= says (empty: none), then the user's identity
    # (initgroups, setresgid, setresuid: a non-root user keeps no capability), the umask, no new privileges, and
    # last the seccomp filters.
    libc = ctypes.CDLL(None, use_errno=True)
    # LimitNICE=: how far the service may lower its threads' nice values without CAP_SYS_NICE. Set while still
    # root; where even root may not raise the hard limit (no CAP_SYS_RESOURCE, as in a container), as close as
    # the hard limit allows, which is what systemd does (setrlimit_closest).
    limit = last(settings, "LimitNICE")
    if limit:
        wanted = nice_limit(limit)
        try:
            resource.setrlimit(resource.RLIMIT_NICE, (wanted, wanted))
        except (ValueError, OSError):
            hard = resource.getrlimit(resource.RLIMIT_NICE)[1]
            closest = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NICE, (closest, hard))
    bounding = last(settings, "CapabilityBoundingSet")
    if bounding is not None:
        if bounding.strip():
            raise ValueError("only an empty CapabilityBoundingSet= is supported here")
        cap = 0
        while libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
            cap += 1
    os.initgroups(user.pw_name, group.gr_gid)
    os.setresgid(group.gr_gid, group.gr_gid, group.gr_gid)
    os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
    os.umask(int(last(settings, "UMask", "0022"), 8))
    if boolean(settings, "NoNewPrivileges") or settings.get("SystemCallFilter"):
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    load_filters(settings)
    os.execve(argv_[0], argv_, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
