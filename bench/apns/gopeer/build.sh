#!/usr/bin/env bash
# Builds the Go benchmark peer (bench/apns/gopeer) offline from Debian's packages: golang-go (Go 1.19) and
# golang-golang-x-net-dev (golang.org/x/net 0.7.0 under /usr/share/gocode), in GOPATH mode with the module proxy off,
# so nothing is downloaded. Prints the binary's path; without Go it prints why on stderr and exits 3, which the
# benchmark scripts read as "skip this peer".
#
#   bench/apns/gopeer/build.sh [output]     (default bench/out/gopeer)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-$PWD/bench/out/gopeer}
gocode=/usr/share/gocode
if ! command -v go >/dev/null; then
    echo "gopeer skipped: no go (apt-get install golang-go golang-golang-x-net-dev, or make deps-bench)" >&2; exit 3
fi
if [[ ! -d $gocode/src/golang.org/x/net/http2 ]]; then
    echo "gopeer skipped: no $gocode/src/golang.org/x/net/http2 (apt-get install golang-golang-x-net-dev)" >&2; exit 3
fi
# A GOPATH of its own holds the peer and the package the Go peers share (bench/apns/peerkit), Debian's the rest.
gopath=$PWD/bench/out/gopeer-gopath
rm -rf "$gopath" && mkdir -p "$gopath/src/gopeer" "$gopath/src/peerkit" "$(dirname "$out")" bench/out/gocache
cp bench/apns/gopeer/main.go "$gopath/src/gopeer/" && cp bench/apns/peerkit/peerkit.go "$gopath/src/peerkit/"
(cd "$gopath/src/gopeer" && GO111MODULE=off GOPATH=$gopath:$gocode GOPROXY=off GOFLAGS= \
    GOCACHE=$PWD/../../../gocache go build -trimpath -o "$out" .)
echo "$out"
