/// The `push-server` command line: `serve`, `check-config`, `token`, `send`, `export`, `import`, `copy-store`,
/// `vapid-keygen`, `keys`, `audit`, `version`.
///
/// Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
package enum CLI {
    static let usage = """
        push-server \(BuildInfo.version): a self-hosted push provider speaking the Pusher Beams APIs.

        Usage: push-server <command> [options]

        Commands:
          serve --config FILE          run the server (systemd: Type=notify)
          check-config FILE            validate a config file; prints OK or every problem
          token --config FILE --instance ID --user USER
                                       print a Beams user token (HS256) for testing PUT …/user
          send --config FILE --instance ID --device-token HEX [--environment sandbox|production]
                                       push one payload to one device and print Apple's whole answer
          export --config FILE [--instance ID] [--output FILE|-] [--after CURSOR]
                                       write devices as NDJSON (docs/DATA-FORMAT.md)
          import --config FILE --instance ID [--dry-run] FILE|-
                                       import a device file; idempotent by (platform, token)
          copy-store --from CONFIG|SQLITE-FILE --to CONFIG [--replace]
                                       copy every table between SQLite and PostgreSQL, then verify it
          keys ACTION --config FILE --instance ID
                                       list, create, roll or revoke an instance's keys; roll its Beams secret
          instances ACTION --config FILE
                                       list, show, create, update or delete run-time instances
          audit list --config FILE --instance ID [--since SEQ] [--limit N]
                                       print an instance's audit log, one JSON line per entry
          vapid-keygen FILE            write a new VAPID key (web push) to FILE (mode 0600), print its public key
          version                      print the version, git commit and build date

        Run `push-server <command> --help` for a command's options.
        Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
        """

    /// Runs a command; `arguments` excludes the program name.
    package static func run(_ arguments: [String]) async -> Int32 {
        guard let name = arguments.first else {
            Console.err(usage)
            return ExitCode.usage.rawValue
        }
        let rest = Array(arguments.dropFirst())
        let command: any Command.Type
        switch name {
        case "serve": command = ServeCommand.self
        case "check-config": command = CheckConfigCommand.self
        case "token": command = TokenCommand.self
        case "send": command = SendCommand.self
        case "vapid-keygen": command = VAPIDKeygenCommand.self
        case "export": command = ExportCommand.self
        case "import": command = ImportCommand.self
        case "copy-store": command = CopyStoreCommand.self
        case "keys": command = KeysCommand.self
        case "audit": command = AuditCommand.self
        case "instances": command = InstancesCommand.self
        case "version", "--version": command = VersionCommand.self
        case "help", "--help", "-h":
            Console.out(usage)
            return ExitCode.ok.rawValue
        default:
            Console.err("push-server: unknown command '\(name)'\n\n\(usage)")
            return ExitCode.usage.rawValue
        }
        do {
            let parsed = try Arguments(rest, booleanFlags: command.booleanFlags.union(["help", "h"]))
            if parsed.has("help") || parsed.has("h") {
                Console.out(command.usage)
                return ExitCode.ok.rawValue
            }
            return try await command.run(parsed).rawValue
        } catch let error as UsageError {
            Console.err("push-server \(name): \(error.message)\n\n\(command.usage)")
            return ExitCode.usage.rawValue
        } catch let error as ConfigError {
            Console.err(error.issues.map { "  \($0)" }.joined(separator: "\n"))
            if let hint = CheckConfigCommand.hint(error, path: "FILE") { Console.err(hint) }
            return ExitCode.usage.rawValue
        } catch {
            Console.err("push-server \(name): \(error)")
            return ExitCode.failure.rawValue
        }
    }
}

/// One sub-command.
protocol Command {
    static var usage: String { get }
    /// Options that take no value.
    static var booleanFlags: Set<String> { get }
    static func run(_ arguments: Arguments) async throws -> ExitCode
}

extension Command {
    static var booleanFlags: Set<String> { [] }
}

enum VersionCommand: Command {
    static let usage = """
        Usage: push-server version

        Prints the version (first line: `push-server VERSION`), the git commit and the build date; the last two are
        "unknown" in a binary built without make.
        """
    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly([])
        Console.out("push-server \(BuildInfo.version)\ncommit \(BuildInfo.commit)\nbuilt \(BuildInfo.date)")
        return .ok
    }
}
