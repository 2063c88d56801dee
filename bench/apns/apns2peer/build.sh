#!/usr/bin/env bash
# Builds the apns2 benchmark peer (bench/apns/apns2peer/main.go) against apns2 v0.25.0 itself, unmodified, offline,
# from Debian's Go packages: golang-go (Go 1.19), golang-golang-x-net-dev (x/net 0.7.0, the Go peer's) and
# golang-github-golang-jwt-jwt-dev, with the module proxy off, so nothing is downloaded. Debian does not package apns2,
# so its source comes from APNS2_SRC (a git clone of github.com/sideshow/apns2, any branch: the v0.25.0 tag is read
# from it) or, where the machine may reach GitHub, a fresh clone of that tag into bench/out. Prints the binary's path;
# without Go or apns2's source it prints why on stderr and exits 3, which the benchmark scripts read as "skip this
# peer".
#
#   bench/apns/apns2peer/build.sh [output]     (default bench/out/apns2peer)
#   APNS2_SRC=~/src/apns2 bench/apns/apns2peer/build.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-$PWD/bench/out/apns2peer}
version=v0.25.0
if ! command -v go >/dev/null; then
    echo "apns2 peer skipped: no go (apt-get install golang-go, or make deps-bench)" >&2; exit 3
fi
source_dir=$PWD/bench/out/apns2-$version
if [[ ! -d $source_dir ]]; then
    rm -rf "$source_dir.tmp" && mkdir -p "$source_dir.tmp"
    if [[ -n ${APNS2_SRC:-} ]]; then
        git -C "$APNS2_SRC" archive "$version" | tar -x -C "$source_dir.tmp"
    elif ! timeout 60 git clone -q --depth 1 --branch "$version" https://github.com/sideshow/apns2 "$source_dir.tmp" \
            2>/dev/null; then
        rm -rf "$source_dir.tmp"
        echo "apns2 peer skipped: no apns2 source (APNS2_SRC=<a clone of github.com/sideshow/apns2>; GitHub is not" \
             "reachable from here)" >&2
        exit 3
    fi
    mv "$source_dir.tmp" "$source_dir"
fi
# GOPATH mode over Debian's packages, as gopeer: apns2's packages from the tag, golang.org/x/net/http2 0.7.0 and
# golang-jwt v4 from /usr/share/gocode (Go resolves the `/v4` import to that tree by its go.mod), the tag's own
# vendor/ left out, so apns2 runs on the same x/net as the Go peer and nothing is downloaded.
gocode=/usr/share/gocode
for dir in golang.org/x/net/http2:golang-golang-x-net-dev github.com/golang-jwt/jwt:golang-github-golang-jwt-jwt-dev; do
    if [[ ! -d $gocode/src/${dir%%:*} ]]; then
        echo "apns2 peer skipped: no $gocode/src/${dir%%:*} (apt-get install ${dir#*:})" >&2; exit 3
    fi
done
gopath=$PWD/bench/out/apns2-gopath
rm -rf "$gopath" && mkdir -p "$gopath/src/github.com/sideshow" "$gopath/src/apns2peer" "$gopath/src/peerkit" \
    "$(dirname "$out")" bench/out/gocache
cp -r "$source_dir" "$gopath/src/github.com/sideshow/apns2"
rm -rf "$gopath/src/github.com/sideshow/apns2/vendor"
cp bench/apns/apns2peer/main.go "$gopath/src/apns2peer/main.go"
cp bench/apns/peerkit/peerkit.go "$gopath/src/peerkit/"  # what the Go peers share
(cd "$gopath/src/apns2peer" && GO111MODULE=off GOPATH=$gopath:$gocode GOPROXY=off GOFLAGS= \
    GOCACHE=$PWD/../../../gocache go build -trimpath -o "$out" .)
echo "$out"
