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
// The subscriber's key as an EVP key (what the EVP derivation takes; the sender keeps an EC_POINT instead).
let subscriberKey = try subscription.keys.evpPublicKey()
let ecdh = try sender.sharedSecret(with: subscriberKey)
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
    Case(name: "  part: ECDH derive") { sink &+= try sender.sharedSecret(with: subscriberKey).count },
    Case(name: "  part: HKDF key schedule (5 HMAC-SHA256)") {
        sink &+= try WebPushKeySchedule(ecdhSecret: ecdh, authSecret: auth, subscriberPoint: subscription.keys.publicPoint,
                                        senderPoint: sender.publicPoint, salt: salt).nonce.count
    },
    Case(name: "reference: ES256 sign (APNs provider token / VAPID JWT)") {
        sink &+= try vapidPair.privateKey.sign(tokenInput).count
    },
    Case(name: "reference: P-256 key import, SubjectPublicKeyInfo decoder (before)") {
        let point = subscription.keys.publicPoint
        sink &+= try ES256PublicKey(x: Array(point[1..<33]), y: Array(point[33..<65])).description.count
    },
    Case(name: "reference: P-256 key import, ES256PublicKey(uncompressedPoint:) (now)") {
        sink &+= try ES256PublicKey(uncompressedPoint: subscription.keys.publicPoint).description.count
    },
]

// The same encryption with the sender key and salt injected (what a cached-key sender would pay; never done in
// production, RFC 8291 wants a fresh key per message): shows what key generation adds.
let injected = Case(name: "reference: encrypt 200 B with injected key+salt (ECDH+HKDF+AES-GCM, no keygen)") {
    sink &+= try WebPushEncryption.encrypt(small, for: subscription.keys, senderKey: sender, salt: salt).body.count
}

// The OpenSSL call sequence, part by part: what the sender did before (every context and algorithm looked up per
// call: `EVP_PKEY_CTX_new_from_name`, the one-shot `HMAC()`, `EVP_aes_128_gcm()` in a fresh cipher context),
// rebuilt here so it stays measurable, next to the cheaper sequences (contexts and fetched algorithms reused).
let keygenContext = EVP_PKEY_CTX_new_from_name(nil, "EC", nil)!
_ = EVP_PKEY_keygen_init(keygenContext)
_ = EVP_PKEY_CTX_set_group_name(keygenContext, "P-256")
let parametersKey: OpaquePointer = {
    let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil)
    defer { EVP_PKEY_CTX_free(context) }
    _ = EVP_PKEY_paramgen_init(context)
    _ = EVP_PKEY_CTX_set_group_name(context, "P-256")
    var key: OpaquePointer?
    _ = EVP_PKEY_paramgen(context, &key)
    return key!
}()
let fetchedGCM = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil)!
let cipherContext = EVP_CIPHER_CTX_new()!
let fetchedHMAC = EVP_MAC_fetch(nil, "HMAC", nil)!
let hmacTemplate = EVP_MAC_CTX_new(fetchedHMAC)!
let digestName = strdup("SHA256")!
var hmacParams = [OSSL_PARAM_construct_utf8_string("digest", digestName, 0), OSSL_PARAM_construct_end()]
_ = EVP_MAC_CTX_set_params(hmacTemplate, &hmacParams)
let hmacKey = [UInt8](repeating: 3, count: 32)
let hmacMessage = [UInt8](repeating: 4, count: 145)  // the IKM info: "WebPush: info" ‖ 0 ‖ two points ‖ 1
let gcmKey = [UInt8](repeating: 5, count: 16)
let gcmNonce = [UInt8](repeating: 6, count: 12)
let padded = small + [0x02]

@MainActor func freshKeygen() -> OpaquePointer {
    let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil)
    defer { EVP_PKEY_CTX_free(context) }
    _ = EVP_PKEY_keygen_init(context)
    _ = EVP_PKEY_CTX_set_group_name(context, "P-256")
    var key: OpaquePointer?
    _ = EVP_PKEY_generate(context, &key)
    return key!
}

@MainActor func sealFresh() -> Int {
    let context = EVP_CIPHER_CTX_new()
    defer { EVP_CIPHER_CTX_free(context) }
    _ = EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, gcmKey, gcmNonce)
    var out = [UInt8](repeating: 0, count: padded.count)
    var written: Int32 = 0
    _ = EVP_EncryptUpdate(context, &out, &written, padded, Int32(padded.count))
    _ = EVP_EncryptFinal_ex(context, &out, &written)
    var tag = [UInt8](repeating: 0, count: 16)
    _ = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, &tag)
    return out.count
}

@MainActor func sealReused() -> Int {
    _ = EVP_EncryptInit_ex2(cipherContext, fetchedGCM, gcmKey, gcmNonce, nil)
    var out = [UInt8](repeating: 0, count: padded.count)
    var written: Int32 = 0
    _ = EVP_EncryptUpdate(cipherContext, &out, &written, padded, Int32(padded.count))
    _ = EVP_EncryptFinal_ex(cipherContext, &out, &written)
    var tag = [UInt8](repeating: 0, count: 16)
    _ = EVP_CIPHER_CTX_ctrl(cipherContext, EVP_CTRL_GCM_GET_TAG, 16, &tag)
    return out.count
}

@MainActor func hmacOneShot() -> Int {
    var output = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    _ = HMAC(EVP_sha256(), hmacKey, Int32(hmacKey.count), hmacMessage, hmacMessage.count, &output, &length)
    return Int(length)
}

@MainActor func hmacDuplicated() -> Int {
    let context = EVP_MAC_CTX_dup(hmacTemplate)
    defer { EVP_MAC_CTX_free(context) }
    _ = EVP_MAC_init(context, hmacKey, hmacKey.count, nil)
    _ = EVP_MAC_update(context, hmacMessage, hmacMessage.count)
    var output = [UInt8](repeating: 0, count: 32)
    var length = 0
    _ = EVP_MAC_final(context, &output, &length, 32)
    return length
}

let sequences: [Case] = [
    Case(name: "seq: keygen, context by name per key (before)") { EVP_PKEY_free(freshKeygen()) },
    Case(name: "seq: keygen, one reused context (one thread only)") {
        var key: OpaquePointer?
        _ = EVP_PKEY_generate(keygenContext, &key)
        EVP_PKEY_free(key)
    },
    Case(name: "seq: keygen, context from a P-256 parameters key (now)") {
        let context = EVP_PKEY_CTX_new_from_pkey(nil, parametersKey, nil)
        _ = EVP_PKEY_keygen_init(context)
        var key: OpaquePointer?
        _ = EVP_PKEY_generate(context, &key)
        EVP_PKEY_free(key)
        EVP_PKEY_CTX_free(context)
    },
    Case(name: "seq: 5 x HMAC-SHA256, one-shot HMAC() (before)") { for _ in 0..<5 { sink &+= hmacOneShot() } },
    Case(name: "seq: 5 x HMAC-SHA256, dup of a fetched EVP_MAC_CTX") { for _ in 0..<5 { sink &+= hmacDuplicated() } },
    Case(name: "seq: AES-128-GCM 200 B, new ctx + EVP_aes_128_gcm() (before)") { sink &+= sealFresh() },
    Case(name: "seq: AES-128-GCM 200 B, reused ctx + fetched cipher") { sink &+= sealReused() },
]
// The message key agreement, EVP layer against the EC_POINT level (issue 27): the same two scalar multiplications.
let hmacReused = EVP_MAC_CTX_dup(hmacTemplate)!
@MainActor func hmacReusedContext() -> Int {
    _ = EVP_MAC_init(hmacReused, hmacKey, hmacKey.count, nil)
    _ = EVP_MAC_update(hmacReused, hmacMessage, hmacMessage.count)
    var output = [UInt8](repeating: 0, count: 32)
    var length = 0
    _ = EVP_MAC_final(hmacReused, &output, &length, 32)
    return length
}
let curve = P256Curve.shared!
let subscriberPoint = try curve.point(subscription.keys.publicPoint)
let agreements: [Case] = [
    Case(name: "seq: keygen + ECDH, EVP_PKEY keygen + EVP_PKEY_derive (before)") {
        let key = try P256KeyPair.generate()
        sink &+= try key.sharedSecret(with: subscriberKey).count + key.publicPoint.count
    },
    Case(name: "seq: keygen + ECDH, EC_POINT_mul x2 (P256Curve, now)") {
        let (point, secret) = try curve.agreement(with: subscriberPoint)
        sink &+= point.count + secret.count
    },
    Case(name: "seq: 5 x HMAC-SHA256, one reused EVP_MAC_CTX (per thread)") {
        for _ in 0..<5 { sink &+= hmacReusedContext() }
    },
    Case(name: "reference: encrypt 200 B, EVP key pair per message (before)") {
        sink &+= try WebPushEncryption.encrypt(small, for: subscription.keys, senderKey: try P256KeyPair.generate())
            .body.count
    },
    Case(name: "reference: subscriber keys parse (WebPushSubscriberKeys, now: EC_POINT)") {
        sink &+= try WebPushSubscriberKeys(p256dh: subscription.keys.publicPoint, auth: auth).authSecret.count
    },
    Case(name: "reference: subscriber point alone (EC_POINT_oct2point)") {
        _ = try curve.point(subscription.keys.publicPoint)
        sink &+= 1
    },
]
let allCases = cases + [injected] + sequences + agreements

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
