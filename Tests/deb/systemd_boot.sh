#!/bin/bash
# PID 1 of fresh PID, mount, cgroup, UTS and IPC namespaces (Tests/deb/test_unit_systemd.py starts it with unshare):
# lays the package's files over this machine's / inside the mount namespace only, then becomes systemd, which starts
# push-server.service from the packaged unit text, unchanged.
#
#   systemd_boot.sh STAGE      STAGE/push-server (the binary), STAGE/etc/ (files for /etc), STAGE/push-server.sysusers,
#                              STAGE/units/ (the unit search path: the packaged unit and the few units it names)
#
# /etc and /usr/bin become overlays (writes land in STAGE/overlay), the push-server user is made by systemd-sysusers
# as the package's postinst does, and /run, /var/lib, /var/log and /tmp are private tmpfs, so nothing outside the
# namespace changes. SYSTEMD_UNIT_PATH confines systemd to STAGE/units: none of this machine's services start.
set -euo pipefail
stage=$1
mount --make-rprivate /
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for dir in etc bin; do
    mkdir -p "$stage/overlay/$dir/upper" "$stage/overlay/$dir/work"
done
overlay() {  # overlay LOWER NAME: LOWER's files, writes landing in STAGE/overlay/NAME
    mount -t overlay overlay \
        -o "lowerdir=$1,upperdir=$stage/overlay/$2/upper,workdir=$stage/overlay/$2/work" "$1"
}
overlay /etc etc
overlay /usr/bin bin
cp -a "$stage/etc/." /etc/
install -m 0755 "$stage/push-server" /usr/bin/push-server
systemd-sysusers "$stage/push-server.sysusers"
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir /run/units
cp -r "$stage"/units/. /run/units/
for dir in /var/lib /var/log; do mount -t tmpfs -o mode=0755 tmpfs "$dir"; done
mount -t tmpfs -o mode=1777 tmpfs /tmp
# Shared again, now in peer groups of this namespace only: systemd in a container leaves propagation to its
# manager (as systemd-nspawn sets it), and it needs it to carry mounts made in a service's setup (the credentials'
# ramfs) back to its own namespace.
mount --make-rshared /
exec env SYSTEMD_UNIT_PATH=/run/units container=push-server-test /lib/systemd/systemd --system \
    --unit=push-server-test.target --show-status=no
