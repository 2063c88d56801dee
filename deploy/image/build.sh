#!/usr/bin/env bash
# Builds the OCI image of push-server from Debian packages only: no registry base image. mmdebstrap makes a Debian
# bookworm root (Essential packages only) with the runtime libraries the binary links (dpkg-shlibdeps names them, as for the .deb)
# plus ca-certificates and curl (the health check), the stripped release binary goes in, and umoci (Debian's)
# assembles the root as the single layer of an OCI image layout.
#
#   deploy/image/build.sh BINARY OUTDIR       (`make image` runs it after building the binary)
#
# Writes OUTDIR/push-server-image/ (an OCI image layout, tags <version> and latest) and OUTDIR/push-server-image.tar
# (the same layout as one archive: `podman load -i`, `skopeo copy oci-archive:…`), and prints the layout's path.
# Packages come from DEBIAN_MIRROR (default http://deb.debian.org/debian). Run as root (mmdebstrap's root mode;
# its unshare mode, for a user with subordinate ids, is untried). docs/OPERATIONS.md ("Container image") describes the image.
set -euo pipefail
binary=$(realpath "${1:?usage: build.sh BINARY OUTDIR}")
outdir=$(realpath -m "${2:?usage: build.sh BINARY OUTDIR}")
here=$(cd "$(dirname "$0")" && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
# The user the server runs as, by number so that `runAsNonRoot` checks and volume ownership need no /etc/passwd.
uid=10001

version=$("$binary" version | sed -n '1s/^push-server //p')
[[ $version =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "build.sh: '$version' is not a version" >&2; exit 1; }
# An OCI tag allows [A-Za-z0-9_.-]: a Debian version's ~ and + become -.
tag=${version//[~+]/-}
epoch=${SOURCE_DATE_EPOCH:-$(date +%s)}
# The crash backtracer's setting, as the unit has it: one line in deploy/push-server.service.
backtrace_setting=$(sed -n 's/^Environment=\(SWIFT_BACKTRACE=.*\)$/\1/p' "$here/../push-server.service")
[[ $backtrace_setting == SWIFT_BACKTRACE=* ]] || { echo "build.sh: no SWIFT_BACKTRACE in the unit" >&2; exit 1; }
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The packages: what the binary links (dpkg-shlibdeps, first of each alternative, versions dropped), the CA bundle
# libcurl verifies APNs, FCM and webhooks with, and curl for the health check.
# The binary keeps its symbol table (its debug information is stripped) and the Swift runtime's crash backtracer goes
# in beside it, as in the .deb (deploy/deb/build.sh): a crash writes every thread's stack, with function names, to
# the container's log (SWIFT_BACKTRACE below).
install -m 0755 "$binary" "$work/push-server"
strip --remove-section=.comment --remove-section=.note --strip-debug "$work/push-server"
bash "$here/../install-backtracer.sh" "$work/swift-backtrace"
mkdir -p "$work/debian" && : > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O "-e$work/push-server" "-e$work/swift-backtrace" |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "build.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
packages=$(tr ',' '\n' <<<"$shlibs" | sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' | sort -u | paste -sd, -)
packages="$packages,ca-certificates,curl"
echo "build.sh: $suite essential with $packages" >&2

# The essential variant: Debian's Essential packages (a shell, coreutils, dpkg, …) and the ones named, no apt; the
# merged-usr hook makes the merged /usr layout itself, so the usrmerge package (and the perl it needs) stays out.
# Documentation, manual pages and translations are not unpacked (copyright files are). The hooks run outside the root
# with it as $1: the binary and the sample config go in, the user is added (no passwd package: the lines are
# written), the data directory is made the user's. apt retries a failed download three times.
export PUSH_IMAGE_BINARY=$work/push-server PUSH_IMAGE_BACKTRACER=$work/swift-backtrace PUSH_IMAGE_CONFIG=$here/config.json PUSH_IMAGE_UID=$uid
SOURCE_DATE_EPOCH=$epoch mmdebstrap --variant=essential --include="$packages" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --aptopt='Acquire::Retries "3"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --customize-hook='install -m 0755 "$PUSH_IMAGE_BINARY" "$1/usr/bin/push-server"' \
    --customize-hook='install -D -m 0755 "$PUSH_IMAGE_BACKTRACER" "$1/usr/libexec/push-server/swift-backtrace"' \
    --customize-hook='install -d -m 0755 "$1/etc/push-server" "$1/usr/share/push-server"' \
    --customize-hook='install -m 0644 "$PUSH_IMAGE_CONFIG" "$1/etc/push-server/config.json"' \
    --customize-hook='install -m 0644 "$PUSH_IMAGE_CONFIG" "$1/usr/share/push-server/config.json"' \
    --customize-hook='echo "push-server:x:$PUSH_IMAGE_UID:" >> "$1/etc/group"' \
    --customize-hook='echo "push-server:x:$PUSH_IMAGE_UID:$PUSH_IMAGE_UID:push-server:/var/lib/push-server:/usr/sbin/nologin" >> "$1/etc/passwd"' \
    --customize-hook='install -d -m 0700 -o "$PUSH_IMAGE_UID" -g "$PUSH_IMAGE_UID" "$1/var/lib/push-server"' \
    --customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" > "$1/usr/share/push-server/packages.txt"' \
    --skip=output/dev "$suite" "$work/rootfs.tar" "$mirror" >&2
# No device nodes in the layer: every runtime mounts its own /dev (and a rootless unpack could not create them).
# mmdebstrap leaves ./dev out (`--skip=output/dev`); an empty ./dev is appended for the runtime to mount on. (Not
# `tar --delete` of the nodes: on mmdebstrap's pax archive it corrupted the layer, "invalid tar header" in CI.)
mkdir -p "$work/empty/dev"
tar -C "$work/empty" --numeric-owner --owner=0 --group=0 --mode=0755 --mtime="@$epoch" -rf "$work/rootfs.tar" ./dev

layout=$outdir/push-server-image
rm -rf "$layout" "$outdir/push-server-image.tar"
mkdir -p "$outdir"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci raw add-layer --image "$layout:$tag" --history.created "$created" \
    --history.created_by "mmdebstrap --variant=essential $suite --include=$packages; deploy/image/build.sh" "$work/rootfs.tar"
umoci config --image "$layout:$tag" --created "$created" --history.created "$created" \
    --history.created_by "umoci config (deploy/image/build.sh)" --author "push-server maintainers" \
    --config.user "$uid:$uid" --config.workingdir /var/lib/push-server \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env "$backtrace_setting" \
    --config.entrypoint /usr/bin/push-server --config.entrypoint serve \
    --config.entrypoint --config --config.entrypoint /etc/push-server/config.json \
    --config.volume /etc/push-server --config.volume /var/lib/push-server \
    --config.exposedports 8080/tcp --config.exposedports 9090/tcp --config.stopsignal SIGTERM \
    --config.label "org.opencontainers.image.title=push-server" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.created=$created" \
    --config.label "org.opencontainers.image.licenses=Apache-2.0" \
    --config.label "org.opencontainers.image.base.name=debian:$suite (mmdebstrap essential)"
# The health check: the OCI image config has no field for one; Docker's image config (the same JSON, a superset)
# has `Healthcheck`, which Docker reads and OCI tools ignore. Added here (and the manifest's mediaType umoci 0.4
# omits), with the digests umoci recorded updated.
python3 "$here/patch_config.py" "$layout" "$tag"
umoci tag --image "$layout:$tag" latest
umoci gc --layout "$layout"
chmod 0644 "$layout"/blobs/sha256/*  # umoci writes layers 0600; a layout is for anyone to copy
tar -C "$layout" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -cf "$outdir/push-server-image.tar" .
echo "$layout"
