import BeamsModel
import ConfigModel
import Foundation
import JWTSigner
import Logging

/// `push-server token`: prints a Beams user token, exactly what the server SDKs' `generateToken` produce.
enum TokenCommand: Command {
    static let usage = """
        Usage: push-server token --config FILE --instance ID --user USER [--ttl SECONDS]

        Prints a Beams user token (HS256 JWT signed with the instance's secret key; claims sub, iss, exp, iat) for
        testing `PUT /device_api/v1/instances/ID/devices/apns/DEVICE/user`. Default lifetime: 86400 s (24 h).
        After `push-server keys roll-beams-secret`, the current secret is read from the store.
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config", "instance", "user", "ttl"])
        let (config, _) = try ServerConfig.load(path: try arguments.require("config"))
        let instanceID = try arguments.require("instance")
        let user = try arguments.require("user")
        guard (1...BeamsUserToken.maxSubjectBytes).contains(user.utf8.count) else {
            throw UsageError("--user must be 1-\(BeamsUserToken.maxSubjectBytes) bytes")
        }
        var ttl = 86_400
        if let text = arguments["ttl"] {
            guard let value = Int(text), value > 0 else {
                throw UsageError("--ttl must be a positive number of seconds")
            }
            ttl = value
        }
        let instance = try await CommandInstance.find(instanceID, config: config)
        let secret = await currentSecret(config, instance)
        let token = try BeamsUserToken.issue(
            instanceID: instance.id, userID: user, secret: secret,
            now: Int(Date().timeIntervalSince1970), lifetime: ttl)
        Console.out(token)
        return .ok
    }

    /// The instance's current Beams secret: the stored one after a roll, else the config file's. A store that cannot
    /// be opened leaves the config file's (said on standard error).
    static func currentSecret(_ config: ServerConfig, _ instance: InstanceConfig) async -> String {
        do {
            let store = try await Application.openStore(
                config.storage, exclusive: false, logger: .disabled,
                healthEvents: { _ in })
            let seal = config.keys.encryptionKey.flatMap { try? SecretSeal(deriving: $0) }
            let ring = KeyRing(store: store, seal: seal, logger: .disabled, now: { Date() })
            let secret = try? await ring.beamsSecrets(instance).first?.secret
            try? await store.close()
            if let secret { return secret }
        } catch {
            Console.err("push-server token: the store cannot be read (\(error)); signing with the config file's secret")
        }
        return instance.secretKey
    }
}
