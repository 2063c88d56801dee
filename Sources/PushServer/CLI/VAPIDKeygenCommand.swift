import Foundation
import WebPush

#if canImport(Glibc)
    import Glibc
#endif

/// `push-server vapid-keygen FILE`: writes a new VAPID key pair for an instance's `web.vapidKeyFile`.
enum VAPIDKeygenCommand: Command {
    static let usage = """
        Usage: push-server vapid-keygen FILE

        Writes a new P-256 private key (PKCS#8 PEM) to FILE with mode 0600 and prints its public key (base64url),
        which is what GET /device_api/v1/instances/ID/web-vapid-public-key will answer. Refuses to overwrite an
        existing file: every browser subscribed with the old key would silently stop receiving pushes.
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly([])
        guard let path = arguments.positionals.first, arguments.positionals.count == 1 else {
            throw UsageError("exactly one output file is required")
        }
        let (keyPair, pem) = try VAPIDKeyPair.generate()
        // O_EXCL: never replace a key in use; 0600 from the start, so the key is never readable by others.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            Console.err("push-server vapid-keygen: cannot create \(path): \(reason)")
            return .failure
        }
        let bytes = Array(pem.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else {
            unlink(path)
            Console.err("push-server vapid-keygen: cannot write \(path)")
            return .failure
        }
        Console.out(keyPair.publicKeyBase64URL)
        return .ok
    }
}
