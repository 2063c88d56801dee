#!/usr/bin/env bash
# Installs the Swift runtime's crash backtracer that the .deb and the OCI image ship beside the binary: the static
# one (`swift-backtrace-static`, which serves a binary with the Swift runtime linked in) of the toolchain that
# built it, stripped. The unit's SWIFT_BACKTRACE (deploy/push-server.service) names it; on a crash the runtime starts
# it and it writes every thread's stack, by thread name and function, to the log (docs/OPERATIONS.md, "Stopping,
# restarting, crashes").
#
#   deploy/install-backtracer.sh DEST     (deploy/deb/build.sh and deploy/image/build.sh run it)
#
# SWIFT_BACKTRACER names another backtracer; SWIFT another `swift` whose toolchain holds it.
set -euo pipefail
dest=${1:?usage: install-backtracer.sh DEST}
toolchain=$(dirname "$(realpath "$(command -v "${SWIFT:-swift}")")")/..
backtracer=${SWIFT_BACKTRACER:-$toolchain/libexec/swift/linux/swift-backtrace-static}
[ -x "$backtracer" ] || { echo "install-backtracer.sh: no backtracer at $backtracer (set SWIFT_BACKTRACER)" >&2; exit 1; }
install -D -m 0755 "$backtracer" "$dest"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$dest"
