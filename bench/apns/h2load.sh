#!/usr/bin/env bash
# The sink's ceiling: nghttp2's own C client (h2load) sends N APNs-like POSTs (130-byte alert JSON, APNs headers)
# over C connections x S streams and prints requests/s.
#
#   bench/apns/h2load.sh <port> <n> <conns> <streams>
set -euo pipefail
port=${1:?port}; n=${2:-100000}; conns=${3:-1}; streams=${4:-100}
body=$(mktemp)
trap 'rm -f "$body"' EXIT
# 130 bytes, the size used for every APNs benchmark in this project.
printf '%s' '{"aps":{"alert":{"title":"Benchmark","body":"A notification body of a typical size for APNs pushes."},"sound":"default"},"id":123}' > "$body"
size=$(stat -c %s "$body")
[[ $size == 130 ]] || { echo "body is $size bytes, expected 130" >&2; exit 1; }
out=$(h2load -n "$n" -c "$conns" -m "$streams" -t 1 -d "$body" \
    -H 'apns-topic: com.example.app' -H 'apns-push-type: alert' -H 'apns-priority: 10' \
    -H 'apns-expiration: 0' -H 'apns-id: 123e4567-e89b-12d3-a456-426614174000' \
    -H 'authorization: bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ.eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLXBsYWNlaG9sZGVyLWZvci1hLXNpbmstdGhhdC1jaGVja3Mtbm90aGluZy0xMjM0NTY3ODkw' \
    "https://127.0.0.1:$port/3/device/$(printf 'ab%.0s' $(seq 32))")
echo "$out" | grep -E '^(finished|requests|status codes)' | sed 's/^/# /'
rps=$(echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
ok=$(echo "$out" | sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p')
echo "h2load n=$n conns=$conns streams=$streams: ${rps} req/s (2xx: ${ok}/${n})"
