import ConfigModel
import PushServer
import XCTest

/// `engine.maxScheduleDays`, `engine.nodeId`, the publish slot keys and `instances[].delivery`: defaults, bounds and field-precise errors.
final class ServerConfigDeliveryTests: XCTestCase {
    private func instance(_ delivery: String) -> String {
        #"{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","delivery":\#(delivery)}"#
    }

    private func errors(_ json: String) -> [String] {
        configErrors { _ = try ServerConfig.parse(Data(json.utf8), environment: [:]) }
    }

    func testDefaultsAreUTCUnthrottledAndThirtyDays() throws {
        let (config, _) = try ServerConfig.parse(Data(#"{"instances":[\#(instance("{}"))]}"#.utf8), environment: [:])
        XCTAssertEqual(config.engine.maxScheduleDays, 30)
        XCTAssertEqual(config.instances[0].delivery, InstanceDeliveryConfig())
        XCTAssertEqual(config.instances[0].delivery.defaultTimeZone, "UTC")
        XCTAssertNil(config.instances[0].delivery.defaultThrottlePerMinute)
    }

    func testReadsEveryKey() throws {
        let json = #"""
            {"engine":{"maxScheduleDays":7},"instances":[\#(instance(
                #"{"defaultTimeZone":"Europe/Paris","defaultThrottlePerMinute":600,"maxThrottlePerMinute":6000}"#))]}
            """#
        let (config, _) = try ServerConfig.parse(Data(json.utf8), environment: [:])
        XCTAssertEqual(config.engine.maxScheduleDays, 7)
        XCTAssertEqual(config.instances[0].delivery.defaultTimeZone, "Europe/Paris")
        XCTAssertEqual(config.instances[0].delivery.defaultThrottlePerMinute, 600)
        XCTAssertEqual(config.instances[0].delivery.maxThrottlePerMinute, 6000)
    }

    func testNodeIDIsUnsetByDefaultAndReadWhenItIsAPlainName() throws {
        let (plain, _) = try ServerConfig.parse(Data(#"{"instances":[\#(instance("{}"))]}"#.utf8), environment: [:])
        XCTAssertNil(plain.engine.nodeID)
        let (named, _) = try ServerConfig.parse(
            Data(#"{"engine":{"nodeId":"push-1.eu_west"},"instances":[\#(instance("{}"))]}"#.utf8), environment: [:])
        XCTAssertEqual(named.engine.nodeID, "push-1.eu_west")
        XCTAssertEqual(
            errors(#"{"engine":{"nodeId":"two words"},"instances":[\#(instance("{}"))]}"#),
            [
                #"engine.nodeId: must be 1 to 64 letters, digits, '.', '_' or '-', got "two words""#
            ])
        XCTAssertEqual(errors(#"{"engine":{"nodeId":""},"instances":[\#(instance("{}"))]}"#).count, 1)
    }

    func testPublishSlotKeysHaveDefaultsAndBounds() throws {
        let (plain, _) = try ServerConfig.parse(Data(#"{"instances":[\#(instance("{}"))]}"#.utf8), environment: [:])
        XCTAssertEqual(plain.engine.expressPublishSlots, 2)
        XCTAssertEqual(plain.engine.maxParkedPublishes, 256)
        let (set, _) = try ServerConfig.parse(
            Data(
                #"{"engine":{"expressPublishSlots":0,"maxParkedPublishes":10},"instances":[\#(instance("{}"))]}"#.utf8),
            environment: [:])
        XCTAssertEqual(set.engine.expressPublishSlots, 0)
        XCTAssertEqual(set.engine.maxParkedPublishes, 10)
        XCTAssertEqual(plain.instances[0].publishWeight, 1)
        let heavyJSON =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","publishWeight":4}]}"#
        let (heavy, _) = try ServerConfig.parse(Data(heavyJSON.utf8), environment: [:])
        XCTAssertEqual(heavy.instances[0].publishWeight, 4)
        let zeroJSON = heavyJSON.replacingOccurrences(of: #""publishWeight":4"#, with: #""publishWeight":0"#)
        XCTAssertEqual(errors(zeroJSON), ["instances[0].publishWeight: must be between 1 and 100, got 0"])
        XCTAssertEqual(
            Set(
                errors(
                    #"{"engine":{"expressPublishSlots":65,"maxParkedPublishes":-1},"instances":[\#(instance("{}"))]}"#)),
            [
                "engine.expressPublishSlots: must be between 0 and 64, got 65",
                "engine.maxParkedPublishes: must be between 0 and 10000, got -1",
            ])
    }

    func testNamesEachBadKey() {
        XCTAssertEqual(
            Set(
                errors(
                    #"{"engine":{"maxScheduleDays":0},"instances":[\#(instance(#"{"defaultTimeZone":"Mars/Olympus","defaultThrottlePerMinute":0,"maxThrottlePerMinute":6000001}"#))]}"#
                )),
            [
                "engine.maxScheduleDays: must be between 1 and 366, got 0",
                #"instances[0].delivery.defaultTimeZone: unknown time zone "Mars/Olympus": use an IANA name such as Europe/Paris"#,
                "instances[0].delivery.defaultThrottlePerMinute: must be between 1 and 6000000, got 0",
                "instances[0].delivery.maxThrottlePerMinute: must be between 1 and 6000000, got 6000001",
            ])
        XCTAssertEqual(
            errors(#"{"instances":[\#(instance(#"{"defaultThrottlePerMinute":100,"maxThrottlePerMinute":10}"#))]}"#),
            [
                "instances[0].delivery.defaultThrottlePerMinute: must not exceed maxThrottlePerMinute (10), got 100"
            ])
        XCTAssertEqual(
            errors(#"{"instances":[\#(instance(#""UTC""#))]}"#),
            ["instances[0].delivery: must be an object, got string"])
        XCTAssertEqual(errors(#"{"instances":[\#(instance(#"{"defaultTimeZone":"GMT+1"}"#))]}"#).count, 1)
    }
}
