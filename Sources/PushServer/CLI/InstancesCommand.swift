import BeamsModel
import Foundation
import JSON
import JWTSigner
import Logging
import Observability
import PushStore

/// `push-server instances`: run-time instances in the store the config names, beside running servers (each node
/// serves a change within about a second). The same rules as the admin API (`InstanceAdmin`): validated as the
/// config file's instances are, config-file instances read-only, every change audited as `cli:<user>`.
enum InstancesCommand: Command {
    static let usage = """
        Usage: push-server instances ACTION --config FILE [options]

        Actions:
          list                         one JSON line per instance (config-file and stored; secrets masked)
          show --instance ID           one stored instance's definition (secrets masked)
          create --definition FILE|-   create an instance from a JSON object (an entry of the config file's
                                       instances); without an id or secretKey, both are made and the secret is
                                       printed once
          update --instance ID --definition FILE|- [--replace] [--if-version N]
                                       merge the JSON object into the stored definition (RFC 7396: null removes a
                                       field), or replace it whole with --replace; "********" keeps a stored secret
          delete --instance ID [--if-version N]
                                       stop serving the instance on every node and delete its definition

        Needs keys.encryptionKey in the config (definitions are stored sealed with it). A definition with errors
        changes nothing; each error is printed. Exit 0 on success, 1 on a refused change or failure, 2 for usage
        errors.
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config", "instance", "definition", "replace", "if-version"])
        guard arguments.positionals.count == 1, let action = arguments.positionals.first else {
            throw UsageError("give one action: list, show, create, update or delete")
        }
        guard ["list", "show", "create", "update", "delete"].contains(action) else {
            throw UsageError("unknown action '\(action)'")
        }
        let (config, _) = try ServerConfig.load(
            path: try arguments.require("config"), validateKey: APNsKeyCheck.problem)
        let expected = try arguments["if-version"].map { text throws(UsageError) in
            guard let version = Int64(text) else { throw UsageError("--if-version must be a version number") }
            return version
        }
        let definition: [String: JSONValue]? = try arguments["definition"].map { path throws(UsageError) in
            try readDefinition(path)
        }
        let store = try await Application.openStore(
            config.storage, exclusive: false, logger: .disabled, healthEvents: { _ in })
        let admin = InstanceAdmin(
            store: store, seal: config.keys.encryptionKey.flatMap { try? SecretSeal(deriving: $0) },
            policy: config.webhooks.policy, environment: ProcessInfo.processInfo.environment,
            validateKey: { APNsKeyCheck.problem($0) }, configIDs: Set(config.instances.map { $0.id.lowercased() }),
            now: { Date() })
        do {
            try await perform(action, arguments, config, admin, definition: definition, expected: expected)
            try? await store.close()
            return .ok
        } catch let error as InstanceAdmin.Failure {
            try? await store.close()
            for line in describe(error) { Console.err("push-server instances \(action): \(line)") }
            return .failure
        } catch {
            try? await store.close()
            throw error
        }
    }

    private static func perform(
        _ action: String, _ arguments: Arguments, _ config: ServerConfig, _ admin: InstanceAdmin,
        definition: [String: JSONValue]?, expected: Int64?
    ) async throws {
        let actor = AuditActor.commandLine()
        switch action {
        case "list":
            for instance in config.instances {
                Console.out(JSONValue.object(["id": .string(instance.id), "source": .string("config")]).jsonText)
            }
            for shown in try await admin.list().instances { Console.out(render(shown).jsonText) }
        case "show":
            Console.out(render(try await admin.show(try arguments.require("instance"))).jsonText)
        case "create":
            guard let definition else { throw UsageError("--definition FILE|- is required") }
            let applied = try await admin.create(definition, actor: actor)
            report(applied)
            if let secret = applied.generatedSecret {
                Console.out(secret)
                Console.err(
                    "Created instance \(applied.id) (version \(applied.version)); its Beams secret, above, is shown only now."
                )
            } else {
                Console.err("Created instance \(applied.id) (version \(applied.version)).")
            }
        case "update":
            guard let definition else { throw UsageError("--definition FILE|- is required") }
            let id = try arguments.require("instance")
            let applied = try await admin.update(
                id, arguments.has("replace") ? .replace(definition) : .merge(definition),
                expectedVersion: expected, actor: actor)
            report(applied)
            Console.err("Changed instance \(applied.id) (version \(applied.version)).")
        default:  // delete
            let id = try arguments.require("instance")
            let version = try await admin.delete(id, expectedVersion: expected, actor: actor)
            Console.err("Deleted instance \(id.lowercased()) (version \(version)).")
        }
    }

    private static func report(_ applied: InstanceAdmin.Applied) {
        for warning in applied.warnings { Console.err("warning: \(warning.path): \(warning.message)") }
    }

    private static func render(_ shown: InstanceAdmin.Shown) -> JSONValue {
        .object([
            "id": .string(shown.row.id), "source": .string("store"), "version": .string(String(shown.row.version)),
            "createdAt": .string(shown.row.createdAt.iso8601), "updatedAt": .string(shown.row.updatedAt.iso8601),
            "definition": shown.definition?.masked ?? .null,
        ])
    }

    private static func readDefinition(_ path: String) throws(UsageError) -> [String: JSONValue] {
        let data: Data?
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: path)
        }
        guard let data else { throw UsageError("--definition: cannot read \(path)") }
        guard let object = JSONValue.parse(data)?.objectValue else {
            throw UsageError("--definition: \(path) is not a JSON object")
        }
        return object
    }

    static func describe(_ error: InstanceAdmin.Failure) -> [String] {
        switch error {
        case .invalid(let issues):
            return ["the definition is not valid; nothing changed"] + issues.map { "\($0.path): \($0.message)" }
        case .readOnly(let id): return ["\(id) is defined in the config file: edit the file and reload (SIGHUP)"]
        case .exists(let id, let configured):
            return [configured ? "\(id) is defined in the config file: pick another id" : "\(id) already exists"]
        case .notFound(let id): return ["no stored instance \(id)"]
        case .versionMismatch(let current): return ["the instance changed since (its version is now \(current))"]
        case .noEncryptionKey: return ["set keys.encryptionKey in the config: definitions are stored sealed with it"]
        case .store(let detail): return ["the store is unavailable: \(detail)"]
        }
    }
}
