// WebPushBench: CPU cost of RFC 8291 message encryption per Web Push message, next to references measured in the
// same process and run: the ES256 signature the APNs path makes for provider tokens (and VAPID for its tokens),
// and the parts of the encryption on their own.
//
// Usage: WebPushBench [--iterations N] [--rounds N]
//   Single thread. Each case runs N iterations per round; rounds interleave the cases so machine noise hits all of
//   them alike; the report gives the median round per case, as µs of process CPU time and wall time per operation.
import Foundation
import COpenSSL
import JWTSigner
import WebPush

#if canImport(Glibc)
import Glibc
#endif

var iterations = 2000
var rounds = 5
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--iterations": iterations = max(1, Int(arguments.next() ?? "") ?? iterations)
    case "--rounds": rounds = max(1, Int(arguments.next() ?? "") ?? rounds)
    default:
        print("unknown argument \(argument)")
        exit(2)
    }
}

func cpuSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

func wallSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

struct Case {
    let name: String
    let body: () throws -> Void
}

// Inputs: one browser subscription, a VAPID key pair, payloads the size of a typical Beams notification and the
// largest one that fits a 4096-byte body.
let subscriber = try P256KeyPair.generate()
let auth = [UInt8](repeating: 7, count: 16)
let subscription = try WebPushSubscription(endpoint: "https://fcm.googleapis.com/fcm/send/bench",
                                           p256dh: Base64URL.encode(subscriber.publicPoint), auth: Base64URL.encode(auth))
let small = [UInt8](repeating: 0x61, count: 200)
let large = [UInt8](repeating: 0x61, count: WebPushMessage.maxPayloadSize)
let (vapidPair, _) = try VAPIDKeyPair.generate()
let vapid = VAPIDAuthorizer(keyPair: vapidPair, subject: try VAPIDSubject("mailto:bench@example.com"))
let message = try WebPushMessage(payload: small, ttl: 3600)
let sender = try P256KeyPair.generate()
let ecdh = try sender.sharedSecret(with: subscription.keys.publicKey)
let salt = [UInt8](repeating: 1, count: 16)
let schedule = try WebPushKeySchedule(ecdhSecret: ecdh, authSecret: auth, subscriberPoint: subscription.keys.publicPoint,
                                      senderPoint: sender.publicPoint, salt: salt)
let tokenInput = Array("eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWTEyMzQ1NjcifQ.eyJpc3MiOiJURUFNMTIzNDU2IiwiaWF0IjoxNzAwMDAwMDAwfQ".utf8)
var sink = 0

let cases: [Case] = [
    Case(name: "webpush encrypt 200 B (keygen+ECDH+HKDF+AES-GCM)") {
        sink &+= try WebPushEncryption.encrypt(small, for: subscription.keys).body.count
    },
    Case(name: "webpush encrypt 3993 B") { sink &+= try WebPushEncryption.encrypt(large, for: subscription.keys).body.count },
    Case(name: "webpush request 200 B (encrypt + cached VAPID + headers)") {
        sink &+= try WebPushRequest(subscription: subscription, message: message, vapid: vapid).body.count
    },
    Case(name: "  part: P-256 ephemeral keygen") { sink &+= try P256KeyPair.generate().publicPoint.count },
    Case(name: "  part: ECDH derive") { sink &+= try sender.sharedSecret(with: subscription.keys.publicKey).count },
    Case(name: "  part: HKDF key schedule (5 HMAC-SHA256)") {
        sink &+= try WebPushKeySchedule(ecdhSecret: ecdh, authSecret: auth, subscriberPoint: subscription.keys.publicPoint,
                                        senderPoint: sender.publicPoint, salt: salt).nonce.count
    },
    Case(name: "reference: ES256 sign (APNs provider token / VAPID JWT)") {
        sink &+= try vapidPair.privateKey.sign(tokenInput).count
    },
    Case(name: "reference: P-256 subscription key import (validation)") {
        sink &+= try ES256PublicKey(uncompressedPoint: subscription.keys.publicPoint).description.count
    },
]

// The same encryption with the sender key and salt injected (what a cached-key sender would pay; never done in
// production, RFC 8291 wants a fresh key per message): shows what key generation adds.
let injected = Case(name: "reference: encrypt 200 B with injected key+salt (ECDH+HKDF+AES-GCM, no keygen)") {
    sink &+= try WebPushEncryption.encrypt(small, for: subscription.keys, senderKey: sender, salt: salt).body.count
}
let allCases = cases + [injected]

print("WebPushBench: \(iterations) iterations x \(rounds) rounds per case, single thread, interleaved rounds, median round")
print("OpenSSL \(String(cString: OpenSSL_version(0)))")  // OPENSSL_VERSION
var cpu = [[Double]](repeating: [], count: allCases.count)
var wall = [[Double]](repeating: [], count: allCases.count)
for _ in 0..<rounds {
    for (index, entry) in allCases.enumerated() {
        let cpuStart = cpuSeconds()
        let wallStart = wallSeconds()
        for _ in 0..<iterations { try entry.body() }
        cpu[index].append((cpuSeconds() - cpuStart) / Double(iterations) * 1e6)
        wall[index].append((wallSeconds() - wallStart) / Double(iterations) * 1e6)
    }
}
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
let width = allCases.map(\.name.count).max() ?? 40
print("case".padding(toLength: width, withPad: " ", startingAt: 0) + "   cpu µs/op   wall µs/op   ops/s/core")
for (index, entry) in allCases.enumerated() {
    let c = median(cpu[index])
    let w = median(wall[index])
    print(entry.name.padding(toLength: width, withPad: " ", startingAt: 0)
        + String(format: "   %9.1f   %10.1f   %10.0f", c, w, 1e6 / c))
}
print("sink \(sink)")  // keeps the work observable
