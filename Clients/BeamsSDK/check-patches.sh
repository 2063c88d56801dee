#!/usr/bin/env bash
# Checks the patches against a checkout of push-notifications-swift (github.com/pusher/push-notifications-swift,
# tag 4.0.0): they apply cleanly, and the patched files compile (on Linux too: they need only Foundation) and build
# the URLs and the registration body push-server expects, and the first-start rules of the migration patch (its
# changes to ServerSyncProcessHandler.swift and NetworkService.swift need UIKit/AppKit and are checked to apply only).
#   Clients/BeamsSDK/check-patches.sh /path/to/push-notifications-swift [REF, default 4.0.0]
set -euo pipefail
sdk=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$sdk" archive "${2:-4.0.0}" Sources | tar -x -C "$work"
cd "$work"
git init -q . && git add -A && git -c user.email=x@y -c user.name=x commit -qm base
for patch in "$here"/*.patch; do
    git apply --check "$patch" && git apply "$patch" && echo "applies: $(basename "$patch")"
done
cat > main.swift <<'SWIFT'
import Foundation
// Bundle.main has no Info.plist here, so the fallback is exercised; the override is exercised by the app.
let device = URL.PushNotifications.devices(instanceId: "i")!.absoluteString
precondition(device == "https://i.pushnotifications.pusher.com/device_api/v1/instances/i/devices/apns", device)
let events = URL.PushNotifications.events(instanceId: "i")!.absoluteString
precondition(events == "https://i.pushnotifications.pusher.com/reporting_api/v2/instances/i/events", events)
var register = Register(token: "ab", bundleIdentifier: "b", metadata: Metadata(sdkVersion: "4.0.0", iosVersion: "17.0", macosVersion: nil))
let withoutKey = String(decoding: try JSONEncoder().encode(register), as: UTF8.self)
precondition(!withoutKey.contains("environment"), withoutKey)
register.environment = "sandbox"
let withKey = String(decoding: try JSONEncoder().encode(register), as: UTF8.self)
precondition(withKey.contains("\"environment\":\"sandbox\""), withKey)
precondition(!withKey.contains("beamsDeviceId"), withKey)
register.beamsDeviceId = "apns-0f1e2d3c"
let moving = String(decoding: try JSONEncoder().encode(register), as: UTF8.self)
precondition(moving.contains("\"beamsDeviceId\":\"apns-0f1e2d3c\""), moving)
// The first start against push-server keeps the local interests and sends the Beams id; later starts do neither.
let base = "https://push.example.com"
precondition(PushServerMigration.isMoving(registeredBase: nil, currentBase: base))
precondition(!PushServerMigration.isMoving(registeredBase: base, currentBase: base))
precondition(!PushServerMigration.isMoving(registeredBase: nil, currentBase: nil), "an app still on Beams")
precondition(PushServerMigration.isMoving(registeredBase: "https://old.example.com", currentBase: base))
precondition(PushServerMigration.beamsDeviceId(storedDeviceId: "apns-1", registeredBase: nil, currentBase: base) == "apns-1")
precondition(PushServerMigration.beamsDeviceId(storedDeviceId: "apns-2", registeredBase: base, currentBase: base) == nil)
precondition(PushServerMigration.beamsDeviceId(storedDeviceId: "apns-1", registeredBase: nil, currentBase: nil) == nil)
precondition(PushServerMigration.startingInterests(initial: [], local: ["news", "sport"], moving: true) == ["news", "sport"])
precondition(PushServerMigration.startingInterests(initial: ["imported"], local: ["news"], moving: true) == ["imported", "news"])
precondition(PushServerMigration.startingInterests(initial: ["server"], local: ["news"], moving: false) == ["server"],
             "after the move the server's answer wins, as in the stock SDK")
print("patched SDK files build the expected URLs and body")
SWIFT
# Metadata.swift returns only under #if os(iOS) / os(OSX); off Apple platforms a stand-in with its fields is used.
cat > Metadata.swift <<'SWIFT'
struct Metadata: Equatable, Codable {
    let sdkVersion: String?
    let iosVersion: String?
    let macosVersion: String?
}
SWIFT
swiftc -swift-version 5 -o check main.swift Metadata.swift Sources/Extensions/URL+NetworkService.swift \
    Sources/Models/Register.swift Sources/Services/PushServerMigration.swift
./check
