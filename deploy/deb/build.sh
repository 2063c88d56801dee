#!/usr/bin/env bash
# Builds push-server_<version>_<arch>.deb from a release binary with Debian's own tools: dpkg-shlibdeps computes
# Depends from the binary's libraries, dpkg-deb builds the archive (owner root:root, no fakeroot needed).
#
#   deploy/deb/build.sh BINARY OUTDIR       (`make deb` runs it after building the binary)
#
# The version is the binary's own (`push-server version`), which `make` links in from VERSION (by default the
# newest entry of deploy/deb/changelog), so the package and the program cannot disagree. File dates are
# SOURCE_DATE_EPOCH when set, for reproducible builds.
set -euo pipefail
binary=$(realpath "${1:?usage: build.sh BINARY OUTDIR}")
outdir=$(realpath -m "${2:?usage: build.sh BINARY OUTDIR}")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

info=$("$binary" version)
version=$(sed -n '1s/^push-server //p' <<<"$info")
commit=$(sed -n 's/^commit //p' <<<"$info")
[[ $version =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "build.sh: '$version' is not a Debian version" >&2; exit 1; }
arch=$(dpkg --print-architecture)
epoch=${SOURCE_DATE_EPOCH:-$(date +%s)}
maintainer="push-server maintainers <maintainers@users.noreply.a-seed-8a9b1f66.example>"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg=$work/push-server
doc=$pkg/usr/share/doc/push-server

install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$pkg/usr/lib/sysusers.d" \
    "$pkg/etc/push-server" "$pkg/usr/share/push-server" "$doc" "$pkg/usr/share/man/man1" \
    "$pkg/usr/share/lintian/overrides"
# The database directory: closed from the first moment; postinst hands it to the push-server user.
install -d -m 0700 "$pkg/var/lib/push-server"

# Stripped of its debug information (the Swift reflection sections are allocated and stay) but not of its symbol
# table, unlike dh_strip: the crash backtracer below reads the names there, so a crash in the journal names the
# function of every frame rather than an address only an unstripped copy of this very build could explain. (The
# names alone as MiniDebugInfo, a 1 MB `.gnu_debugdata` section instead of the 16 MB table, made this toolchain's
# backtracer stop with a fatal error in its own reader.)
install -m 0755 "$binary" "$pkg/usr/bin/push-server"
strip --remove-section=.comment --remove-section=.note --strip-debug "$pkg/usr/bin/push-server"
install -m 0644 "$repo/deploy/push-server.service" "$pkg/lib/systemd/system/push-server.service"
# The crash backtracer the unit's SWIFT_BACKTRACE names: it reads the crashed process through a memory server the
# runtime starts in it, not ptrace, so the unit's sandbox allows it (Tests/deb/test_unit_sandbox.py).
bash "$repo/deploy/install-backtracer.sh" "$pkg/usr/libexec/push-server/swift-backtrace"
install -m 0644 "$here/push-server.sysusers" "$pkg/usr/lib/sysusers.d/push-server.conf"
# The production sample is not a conffile: dpkg would ask about it on every upgrade that changes it, and an
# unattended `apt-get install -y` stops at that question. It ships under /usr/share (not /usr/share/doc, which
# systems may leave out) and postinst copies it to /etc/push-server/config.json only when that file is absent, so
# the administrator's file is never touched. It holds no secrets (those are credentials).
install -m 0644 "$repo/deploy/config.production.json" "$pkg/usr/share/push-server/config.json"
install -m 0644 "$here/lintian-overrides" "$pkg/usr/share/lintian/overrides/push-server"
# The Grafana dashboard for /metrics (docs/OPERATIONS.md, "Grafana dashboard").
install -d -m 0755 "$pkg/usr/share/push-server/grafana"
install -m 0644 "$repo/ops/grafana/push-server.json" "$pkg/usr/share/push-server/grafana/push-server.json"

install -m 0644 "$here/copyright" "$doc/copyright"
# The README, OPERATIONS.md and every document OPERATIONS.md sends the reader to.
for f in README.md docs/OPERATIONS.md docs/API.md docs/APNS.md docs/ARCHITECTURE.md docs/BENCHMARKS.md docs/CONSOLE.md docs/SECURITY.md \
         docs/DATA-FORMAT.md docs/MIGRATING.md; do
    gzip -9n < "$repo/$f" > "$doc/$(basename "$f").gz"
done
chmod 0644 "$doc"/*.gz
# The release notes: deploy/deb/changelog. A version that has no entry there (a build with VERSION=… between
# releases) gets one on top naming its commit; a version older than the newest release is refused.
changelog="$here/changelog"
released=$(sed -n '1s/^push-server (\([^)]*\)).*/\1/p' "$changelog")
if [ "$version" != "$released" ]; then
    dpkg --compare-versions "$version" gt "$released" ||
        { echo "build.sh: version $version is not newer than the newest release in $changelog ($released)" >&2; exit 1; }
    cat > "$work/changelog" <<CHANGELOG
push-server ($version) unstable; urgency=medium

  * Built from git commit $commit, after release $released.

 -- $maintainer  $(date -u -R -d "@$epoch")

CHANGELOG
    cat "$changelog" >> "$work/changelog"
    changelog="$work/changelog"
fi
gzip -9n < "$changelog" > "$doc/changelog.gz"
gzip -9n < "$here/push-server.1" > "$pkg/usr/share/man/man1/push-server.1.gz"
chmod 0644 "$doc/changelog.gz" "$pkg/usr/share/man/man1/push-server.1.gz"

for script in postinst prerm postrm; do install -m 0755 "$here/$script" "$pkg/DEBIAN/$script"; done

# Depends from the libraries the binary links (dpkg-shlibdeps wants a debian/control beside it, even an empty one).
mkdir -p "$work/debian" && : > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O "-e$pkg/usr/bin/push-server" "-e$pkg/usr/libexec/push-server/swift-backtrace" |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "build.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# Installed-Size as dpkg-gencontrol counts it: KiB per file rounded up, 1 per directory.
installed_size=$(cd "$pkg" && find . -path ./DEBIAN -prune -o ! -name . -printf '%y %s\n' |
    awk '{ total += ($1 == "f") ? int(($2 + 1023) / 1024) : 1 } END { print total }')
sed -e "s|@VERSION@|$version|" -e "s|@MAINTAINER@|$maintainer|" -e "s|@INSTALLED_SIZE@|$installed_size|" \
    -e "s|@DEPENDS@|$shlibs|" "$here/control" > "$pkg/DEBIAN/control"
chmod 0644 "$pkg/DEBIAN/control"
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/md5sums"

find "$pkg" -exec touch -h -d "@$epoch" {} +
mkdir -p "$outdir"
deb="$outdir/push-server_${version}_${arch}.deb"
SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
