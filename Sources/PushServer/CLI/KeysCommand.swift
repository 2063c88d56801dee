import BeamsModel
import ConfigModel
import Foundation
import JSON
import JWTSigner
import Logging
import PushStore

/// `push-server keys`: an instance's scoped keys and Beams secret, managed in the store the config names (beside a
/// running server; every node sees a change within about a second).
enum KeysCommand: Command {
    static let usage = """
        Usage: push-server keys ACTION --config FILE --instance ID [options]

        Actions:
          list                         one JSON line per key (never a secret), the Beams secret's rows included
          create --label TEXT --scopes LIST [--expires-in DURATION] [--not-before TIME] [--expires-at TIME]
                                       create a scoped key; prints the key (psk_…) once on standard output
          roll --key ID [--expires-in DURATION]
                                       replace a key; the old one keeps working for DURATION (default 24h)
          revoke --key ID              stop a key at once
          roll-beams-secret [--expires-in DURATION]
                                       replace the Beams secret (needs keys.encryptionKey); prints the new secret once;
                                       the old one keeps working, for Bearer and user tokens, for DURATION (default 24h)

        LIST: comma-separated scopes among publish, publish:read, customer, devices:read, console, instance:admin.
        DURATION: now, or a number with s, m, h or d (1h, 24h, 7d; at most 30d). TIME: RFC 3339.
        Exit 0 on success, 1 on a failure, 2 for usage errors (an unknown key is 1).
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly([
            "config", "instance", "label", "scopes", "expires-in", "expires-at", "not-before", "key",
        ])
        guard arguments.positionals.count == 1, let action = arguments.positionals.first else {
            throw UsageError("give one action: list, create, roll, revoke or roll-beams-secret")
        }
        guard ["list", "create", "roll", "revoke", "roll-beams-secret"].contains(action) else {
            throw UsageError("unknown action '\(action)'")
        }
        let (config, _) = try ServerConfig.load(path: try arguments.require("config"), validateKey: { _ in nil })
        let instanceID = try arguments.require("instance")
        let overlap = try arguments["expires-in"].map { text throws(UsageError) in
            guard let seconds = RollOverlap.seconds(text) else {
                throw UsageError("--expires-in must be now or a duration such as 1h, 24h, 7d (at most 30d)")
            }
            return seconds
        }
        let store = try await Application.openStore(
            config.storage, exclusive: false, logger: .disabled, healthEvents: { _ in })
        let seal = config.keys.encryptionKey.flatMap { try? SecretSeal(deriving: $0) }
        let instance = try await CommandInstance.find(instanceID, config: config, closingOnFailure: store)
        let ring = KeyRing(store: store, seal: seal, logger: .disabled, now: { Date() })
        do {
            let code = try await perform(action, arguments, instance, ring, overlap: overlap)
            try? await store.close()
            return code
        } catch let error as UsageError {
            try? await store.close()
            throw error
        } catch let error as KeyRing.ChangeError {
            try? await store.close()
            Console.err("push-server keys \(action): \(describe(error))")
            return .failure
        } catch {
            try? await store.close()
            throw error
        }
    }

    private static func perform(
        _ action: String, _ arguments: Arguments, _ instance: InstanceConfig, _ ring: KeyRing, overlap: Double?
    ) async throws -> ExitCode {
        let defaultOverlap = RollOverlap.seconds(KeysAPI.defaultOverlap)!
        let actor = AuditActor.commandLine()
        switch action {
        case "list":
            let (keys, fromConfig, current) = try await ring.list(instance)
            for key in keys { Console.out(KeysAPI.render(key, current: current).jsonText) }
            if fromConfig { Console.err("The Beams secret is the config file's (never rolled).") }
        case "create":
            let label = try arguments.require("label")
            let names = try arguments.require("scopes").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let scopes: Set<APIKeyScope>
            switch APIKeyScope.parse(names) {
            case .success(let parsed) where !parsed.isEmpty: scopes = parsed
            case .success: throw UsageError("--scopes is empty")
            case .failure(let unknown): throw UsageError("--scopes: \(unknown.description)")
            }
            let notBefore = try time(arguments, "not-before")
            var expiresAt = try time(arguments, "expires-at")
            if let overlap {
                guard expiresAt == nil, overlap > 0 else {
                    throw UsageError("give --expires-at or a non-zero --expires-in")
                }
                expiresAt = Date().addingTimeInterval(overlap)
            }
            let issued = try await ring.create(
                instance, label: label, scopes: scopes, notBefore: notBefore,
                expiresAt: expiresAt, by: actor)
            Console.out(issued.text)
            Console.err(
                "Created key \(issued.record.id) (\(issued.record.scopes.joined(separator: " "))); the key is shown only now."
            )
        case "roll":
            let (issued, retiredAt) = try await ring.roll(
                instance, keyID: try arguments.require("key"),
                overlap: overlap ?? defaultOverlap, by: actor)
            Console.out(issued.text)
            Console.err("New key \(issued.record.id); the old one works until \(retiredAt.iso8601).")
        case "revoke":
            let record = try await ring.revoke(instance, keyID: try arguments.require("key"), by: actor)
            Console.err("Revoked key \(record.id).")
        default:  // roll-beams-secret
            let (issued, retiredAt) = try await ring.rollBeamsSecret(
                instance, overlap: overlap ?? defaultOverlap, by: actor)
            Console.out(issued.text)
            Console.err("New Beams secret \(issued.record.id); the old one is accepted until \(retiredAt.iso8601).")
        }
        return .ok
    }

    private static func time(_ arguments: Arguments, _ name: String) throws(UsageError) -> Date? {
        guard let text = arguments[name] else { return nil }
        guard let date = RFC3339.parse(text) else { throw UsageError("--\(name) must be an RFC 3339 time") }
        return date
    }

    private static func describe(_ error: KeyRing.ChangeError) -> String {
        switch error {
        case .keyNotFound: return "no live key with this id"
        case .currentBeamsSecret: return "the current Beams secret cannot be revoked: roll it instead"
        case .noEncryptionKey: return "set keys.encryptionKey in the config to roll the Beams secret"
        case .unavailable(let detail): return "the store is unavailable: \(detail)"
        case .crypto(let detail): return detail
        }
    }
}
