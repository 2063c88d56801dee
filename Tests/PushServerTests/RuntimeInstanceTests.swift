import ConfigModel
import Foundation
import HTTPClient
import InMemoryStore
import JSON
import JWTSigner
import Locking
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

/// The pure pieces of run-time instances: one reader validates a config-file instance and a stored definition;
/// definitions are masked, merged and sealed; server-admin keys come from the file and the environment; a set of
/// instances is diffed by fingerprint and merged with the config file winning.
final class RuntimeInstanceTests: XCTestCase {
    private let id = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
    private let secret = "0123456789abcdef0123456789abcdef"

    private func definition(_ extra: [String: JSONValue] = [:]) -> InstanceDefinition {
        var object: [String: JSONValue] = ["id": .string(id), "secretKey": .string(secret)]
        for (key, value) in extra { object[key] = value }
        return InstanceDefinition(object: object)
    }

    private func validate(_ definition: InstanceDefinition, id: String? = nil) -> InstanceDefinition.Validation {
        definition.validate(id: id, policy: DestinationPolicy(), environment: [:], validateKey: { _ in nil })
    }

    private func errors(_ validation: InstanceDefinition.Validation) -> [String] {
        if case .invalid(let issues) = validation { return issues.map(\.description) }
        return []
    }

    // MARK: Validation: the config file's reader

    func testAStoredDefinitionIsHeldToTheConfigFilesRulesWithEveryProblemNamed() {
        let bad = definition([
            "publishWeight": .int(0), "quotas": .object(["devices": .string("ten")]),
            "secretKey": .string("short"),
        ])
        XCTAssertEqual(
            Set(errors(validate(bad))),
            [
                "instance.publishWeight: must be between 1 and 100, got 0",
                "instance.quotas.devices: must be an integer, got string",
                "instance.secretKey: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`",
            ])
        // The same object in a config file gives the same messages under its file path.
        let file = #"{"instances":[{"id":"\#(id)","secretKey":"short","publishWeight":0,"quotas":{"devices":"ten"}}]}"#
        do {
            _ = try ServerConfig.parse(Data(file.utf8), environment: [:])
            XCTFail("the file has errors")
        } catch {
            XCTAssertEqual(
                Set(error.errorDescriptions),
                [
                    "instances[0].publishWeight: must be between 1 and 100, got 0",
                    "instances[0].quotas.devices: must be an integer, got string",
                    "instances[0].secretKey: the secret must be at least 32 bytes; generate one with `head -c 32 /dev/urandom | base64`",
                ])
        }
    }

    func testAValidDefinitionGivesTheInstanceWithItsQuotasAndWeight() {
        let good = definition(["publishWeight": .int(4), "quotas": .object(["devices": .int(10)])])
        guard case .valid(let instance, let warnings) = validate(good) else { return XCTFail("valid") }
        XCTAssertEqual(instance.id, id)
        XCTAssertEqual(instance.publishWeight, 4)
        XCTAssertEqual(instance.quotas.devices, 10)
        XCTAssertEqual(warnings.map(\.path), ["instance.apns"], "no APNs credentials is a warning, as in the file")
    }

    func testTheIdCannotChangeAndTheMaskIsNeverASecret() {
        XCTAssertEqual(
            errors(validate(definition(), id: "00000000-0000-4000-8000-000000000000")),
            [
                "instance.id: must be 00000000-0000-4000-8000-000000000000, the instance the request names (an id cannot change)"
            ])
        let masked = definition(["secretKey": .string(InstanceDefinition.maskedValue)])
        XCTAssertTrue(errors(validate(masked)).contains("instance.secretKey: is the mask ********, not a secret"))
    }

    // MARK: Masking, merging, sealing

    func testSecretsAreMaskedWhereverTheyAre() {
        let shown = definition([
            "webhook": .object([
                "url": .string("https://example.com/hook"),
                "secret": .string("webhook-secret"),
            ])
        ]).masked
        XCTAssertEqual(shown.objectValue?["secretKey"], .string("********"))
        XCTAssertEqual(shown.objectValue?["webhook"]?.objectValue?["secret"], .string("********"))
        XCTAssertEqual(shown.objectValue?["webhook"]?.objectValue?["url"], .string("https://example.com/hook"))
        XCTAssertFalse(shown.jsonText.contains(secret))
    }

    func testAMergePatchChangesWhatItNamesRemovesNullsAndKeepsAMaskedSecret() {
        let stored = definition([
            "publishWeight": .int(2), "quotas": .object(["devices": .int(5), "publishesPerDay": .int(9)]),
        ])
        let merged = stored.merging([
            "secretKey": .string("********"), "publishWeight": .null,
            "quotas": .object(["devices": .int(6)]),
        ])
        XCTAssertEqual(merged.object["secretKey"], .string(secret))
        XCTAssertNil(merged.object["publishWeight"])
        XCTAssertEqual(merged.object["quotas"], .object(["devices": .int(6), "publishesPerDay": .int(9)]))
        let replaced = stored.replacing(with: ["id": .string(id), "secretKey": .string("********")])
        XCTAssertEqual(replaced.object, ["id": .string(id), "secretKey": .string(secret)])
    }

    func testASealedDefinitionOpensOnlyWithItsKeyAndItsId() throws {
        let seal = try SecretSeal(deriving: "encryption-key-0123456789abcdef")
        let text = try definition().sealed(id: id, with: seal)
        XCTAssertFalse(text.contains(secret))
        let row = StoredInstance(id: id, sealedDefinition: text, createdAt: Date(), updatedAt: Date())
        XCTAssertEqual(InstanceDefinition.open(row, with: seal), definition())
        XCTAssertNil(InstanceDefinition.open(row, with: try SecretSeal(deriving: "another-key-0123456789abcdef")))
        var moved = row
        moved.id = "00000000-0000-4000-8000-000000000000"
        XCTAssertNil(InstanceDefinition.open(moved, with: seal), "a definition is bound to its instance id")
    }

    // MARK: Server-admin keys

    func testAdminKeysComeFromTheFileAndTheEnvironmentAndAreNeverPrinted() throws {
        let file = #"{"admin":{"keys":[{"id":"ops","key":"\#(secret)"}]},"instances":[]}"#
        let (config, _) = try ServerConfig.parse(
            Data(file.utf8),
            environment: ["PUSH_SERVER_ADMIN_KEYS": "ci:ci-key-0123456789abcdef0123456789"])
        XCTAssertEqual(config.admin.keys.map(\.id), ["ops", "ci"])
        XCTAssertEqual(config.admin.keys.last?.secret, "ci-key-0123456789abcdef0123456789")
        XCTAssertFalse("\(config.admin.keys)".contains(secret))
        XCTAssertTrue(config.instances.isEmpty, "with admin keys the file may name no instance")
    }

    func testShortDuplicateOrMalformedAdminKeysAreErrors() {
        let file = #"{"admin":{"keys":[{"id":"ops","key":"short"},{"id":"x y","key":"\#(secret)"}]},"instances":[]}"#
        do {
            _ = try ServerConfig.parse(Data(file.utf8), environment: ["PUSH_SERVER_ADMIN_KEYS": "nocolon"])
            XCTFail("errors expected")
        } catch {
            let messages = error.errorDescriptions
            XCTAssertTrue(
                messages.contains { $0.hasPrefix("admin.keys[0].key: the secret must be at least 32 bytes") },
                "\(messages)")
            XCTAssertTrue(
                messages.contains("admin.keys: key id \"x y\" must be 1 to 64 letters, digits, '.', '_' or '-'"),
                "\(messages)")
            XCTAssertTrue(
                messages.contains("PUSH_SERVER_ADMIN_KEYS: each entry must be id:key (entries separated by commas)"),
                "\(messages)")
            XCTAssertFalse(messages.joined().contains("nocolon"), "a value that may be a key is never echoed")
        }
        XCTAssertThrowsError(
            try ServerConfig.parse(Data(#"{"instances":[]}"#.utf8), environment: [:]),
            "without admin keys an instance is still required")
    }

    // MARK: The set: diff and merge

    func testThePlanNamesWhatIsAddedChangedAndRemovedByFingerprint() {
        let plan = InstanceSetPlan(
            current: ["a": "config:1", "b": "store:3", "c": "store:4"],
            wanted: ["a": "config:1", "b": "store:5", "d": "store:6"])
        XCTAssertEqual(plan, InstanceSetPlan(added: ["d"], changed: ["b"], removed: ["c"], unchanged: ["a"]))
        XCTAssertTrue(InstanceSetPlan(current: ["a": "x"], wanted: ["a": "x"]).isEmpty)
    }

    func testAConfigInstanceWinsOverAStoredOneWithItsIdWhichIsReported() {
        let merged = InstanceSetMerge.merge(config: ["a": "config:a"], stored: ["a": 3, "b": 4])
        XCTAssertEqual(merged.shadowed, ["a"])
        XCTAssertEqual(merged.wanted["a"]?.source, .config)
        XCTAssertEqual(merged.wanted["a"]?.fingerprint, "config:a")
        XCTAssertEqual(merged.wanted["b"]?.fingerprint, "store:4")
    }

    func testTheDirectoryHandsOutWholeSnapshotsAndNamesTheRetiredEntries() {
        let config = InstanceConfig(id: id.uppercased(), secretKey: secret, apns: nil, webhook: nil)
        let directory = InstanceDirectory(configs: [config])
        let before = directory.snapshot
        XCTAssertEqual(directory.config(id)?.id, id.uppercased(), "look-ups ignore case")
        var changed = before.entries
        changed[id]?.fingerprint = "config:changed"
        let observed = Locked<[UInt64]>([])
        directory.observe { snapshot in observed.withLock { $0.append(snapshot.generation) } }
        let retired = directory.install(changed, storedVersion: 7)
        XCTAssertEqual(retired.map(\.fingerprint), ["config:"])
        XCTAssertEqual(directory.snapshot.storedVersion, 7)
        XCTAssertEqual(before.entries[id]?.fingerprint, "config:", "a snapshot read earlier is not changed")
        XCTAssertEqual(directory.install([:], storedVersion: 8).map(\.fingerprint), ["config:changed"])
        XCTAssertNil(directory.config(id))
        XCTAssertEqual(observed.withLock { $0 }, [before.generation + 1, before.generation + 2])
    }

    func testTheDirectoryListsTheConfigFilesInstancesInFileOrderThenTheStoresById() {
        // `/ready` and the console list in this order; before, a dictionary's order put any instance first.
        let ids = [
            "f0000000-0000-4000-8000-000000000001", "10000000-0000-4000-8000-000000000002",
            "a0000000-0000-4000-8000-000000000003",
        ]
        let configs = ids.map { InstanceConfig(id: $0, secretKey: secret, apns: nil, webhook: nil) }
        let directory = InstanceDirectory(configs: configs)
        XCTAssertEqual(directory.configs.map(\.id), ids)
        var entries = directory.snapshot.entries
        for stored in ["e0000000-0000-4000-8000-000000000004", "00000000-0000-4000-8000-000000000005"] {
            entries[stored] = InstanceDirectory.Entry(
                config: InstanceConfig(id: stored, secretKey: secret, apns: nil, webhook: nil), runtime: nil,
                source: .store, fingerprint: "store:1", version: 1)
        }
        directory.install(entries, storedVersion: 1)
        XCTAssertEqual(
            directory.configs.map(\.id),
            ids + [
                "00000000-0000-4000-8000-000000000005",
                "e0000000-0000-4000-8000-000000000004",
            ])
    }

    // MARK: Through the store (in memory)

    func testARefusedChangeWritesOnlyItsAuditEntryAndAConfigInstanceIsReadOnly() async throws {
        let store = InMemoryPushStore()
        let admin = InstanceAdmin(
            store: store, seal: try SecretSeal(deriving: "encryption-key-0123456789abcdef"),
            policy: DestinationPolicy(), environment: [:], validateKey: { _ in nil },
            configIDs: ["00000000-0000-4000-8000-000000000000"], now: { Date() })
        let actor = AuditActor(actor: "admin:ops", source: "127.0.0.1", requestID: "r1")
        let created = try await admin.create(definition().object, actor: actor)
        XCTAssertEqual(created.version, 1)
        do {
            _ = try await admin.update(id, .merge(["publishWeight": .int(0)]), expectedVersion: nil, actor: actor)
            XCTFail("refused")
        } catch {
            guard case .invalid = error else { return XCTFail("\(error)") }
        }
        do {
            _ = try await admin.delete("00000000-0000-4000-8000-000000000000", expectedVersion: nil, actor: actor)
            XCTFail("refused")
        } catch {
            XCTAssertEqual(error, .readOnly("00000000-0000-4000-8000-000000000000"))
        }
        let version = try await store.storedInstancesVersion()
        XCTAssertEqual(version, 1, "refused changes change nothing")
        let entries = try await store.auditEntries(instanceID: nil, action: nil, after: 0, limit: 10)
        XCTAssertEqual(
            entries.map { "\($0.action) \($0.outcome)" },
            ["instance.create success", "instance.update refused:invalid", "instance.delete refused:read_only"])
        XCTAssertTrue(entries.allSatisfy { $0.actor == "admin:ops" })
    }
}
