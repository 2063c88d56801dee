import Foundation
import PushServer
import XCTest

/// `limits.maxLiveActivityStartTokensPerDevice` and `limits.maxLiveActivitiesPerDevice`: defaults, bounds and
/// field-precise errors.
final class ServerConfigLiveActivityTests: XCTestCase {
    private let instance =
        #"{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef"}"#

    private func errors(_ limits: String) -> [String] {
        configErrors {
            _ = try ServerConfig.parse(
                Data(#"{"limits":\#(limits),"instances":[\#(instance)]}"#.utf8), environment: [:])
        }
    }

    func testDefaultsAreSixteenEach() throws {
        let (config, _) = try ServerConfig.parse(Data(#"{"instances":[\#(instance)]}"#.utf8), environment: [:])
        XCTAssertEqual(config.limits.maxLiveActivityStartTokensPerDevice, 16)
        XCTAssertEqual(config.limits.maxLiveActivitiesPerDevice, 16)
    }

    func testReadsBothKeys() throws {
        let json =
            #"{"limits":{"maxLiveActivityStartTokensPerDevice":2,"maxLiveActivitiesPerDevice":5},"instances":[\#(instance)]}"#
        let (config, _) = try ServerConfig.parse(Data(json.utf8), environment: [:])
        XCTAssertEqual(config.limits.maxLiveActivityStartTokensPerDevice, 2)
        XCTAssertEqual(config.limits.maxLiveActivitiesPerDevice, 5)
    }

    func testNamesEachBadKey() {
        XCTAssertEqual(
            Set(errors(#"{"maxLiveActivityStartTokensPerDevice":0,"maxLiveActivitiesPerDevice":1001}"#)),
            [
                "limits.maxLiveActivityStartTokensPerDevice: must be between 1 and 1000, got 0",
                "limits.maxLiveActivitiesPerDevice: must be between 1 and 1000, got 1001",
            ])
    }
}
