import ConfigModel
import Foundation
import Observability
import PushStore
import XCTest

@testable import PublishEngine
@testable import PushServer

/// `instances[].quotas` (defaults, bounds, errors) and the provider budget's arithmetic as pure values: the
/// nodes' shares and the rate a shared pacer holds over budget windows, on a simulated clock.
final class QuotaTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    private func config(_ quotas: String?) throws -> InstanceConfig {
        let extra = quotas.map { #","quotas":\#($0)"# } ?? ""
        let json =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef"\#(extra)}]}"#
        return try ServerConfig.parse(Data(json.utf8), environment: [:]).0.instances[0]
    }

    private func errors(_ quotas: String) -> [String] {
        configErrors { _ = try config(quotas) }
    }

    func testQuotasAreOffByDefault() throws {
        XCTAssertEqual(try config(nil).quotas, InstanceQuotas())
        XCTAssertTrue(try config(nil).quotas.isEmpty)
        XCTAssertEqual(try config("{}").quotas, InstanceQuotas())
    }

    func testReadsEveryQuota() throws {
        let quotas = try config(
            #"{"devices":1000,"publishesPerDay":50,"notificationsPerMinute":{"fcm":600000,"apns":1200}}"#
        ).quotas
        XCTAssertEqual(
            quotas,
            InstanceQuotas(
                devices: 1000, publishesPerDay: 50,
                notificationsPerMinute: [.fcm: 600_000, .apns: 1200]))
    }

    func testOutOfRangeValuesAreErrorsNamingTheField() {
        XCTAssertEqual(errors(#"{"devices":0}"#).count, 1)
        XCTAssertTrue(errors(#"{"devices":0}"#)[0].contains("quotas.devices"), "\(errors(#"{"devices":0}"#))")
        XCTAssertTrue(errors(#"{"publishesPerDay":-1}"#).first?.contains("quotas.publishesPerDay") ?? false)
        XCTAssertTrue(
            errors(#"{"notificationsPerMinute":{"fcm":0}}"#).first?.contains("notificationsPerMinute.fcm") ?? false)
        XCTAssertTrue(errors(#"{"notificationsPerMinute":[600]}"#).first?.contains("notificationsPerMinute") ?? false)
    }

    func testUnknownKeysAndPlatformsAreWarningsAsEverywhereInTheConfig() throws {
        let json =
            #"{"instances":[{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef","quotas":{"publishesPerHour":3,"notificationsPerMinute":{"sms":10}}}]}"#
        let (config, warnings) = try ServerConfig.parse(Data(json.utf8), environment: [:])
        XCTAssertEqual(config.instances[0].quotas, InstanceQuotas())
        let text = warnings.map(\.description).joined(separator: "\n")
        XCTAssertTrue(text.contains("instances[0].quotas.publishesPerHour"), text)
        XCTAssertTrue(text.contains("instances[0].quotas.notificationsPerMinute.sms"), text)
    }

    func testEachNodePacesAnEqualShareRoundedDownSoTheNodesStayWithinTheBudget() {
        XCTAssertEqual(DeliveryBudgets.share(budget: 600_000, liveNodes: 1), 600_000)
        XCTAssertEqual(DeliveryBudgets.share(budget: 600_000, liveNodes: 3), 200_000)
        XCTAssertEqual(DeliveryBudgets.share(budget: 100, liveNodes: 3), 33, "3 × 33 = 99 ≤ 100")
        XCTAssertEqual(DeliveryBudgets.share(budget: 2, liveNodes: 5), 1, "at least one a minute")
        XCTAssertEqual(DeliveryBudgets.share(budget: 600, liveNodes: 0), 600, "no heartbeat yet: this node alone")
        for nodes in 1...16 {
            XCTAssertLessThanOrEqual(DeliveryBudgets.share(budget: 600_000, liveNodes: nodes) * nodes, 600_000)
        }
    }

    /// Senders that take every token they are given, from `nodes` pacers at each node's share, started together.
    /// - Returns: deliveries per whole minute of simulated time, all nodes together.
    private func sendGreedily(budget: Int, nodes: Int, minutes: Int) -> [Int] {
        let start: UInt64 = 7 * second
        let end = start + UInt64(minutes) * 60 * second
        var perMinute = [Int](repeating: 0, count: minutes)
        for _ in 0..<nodes {
            var pacer = DeliveryPacer(perMinute: DeliveryBudgets.share(budget: budget, liveNodes: nodes), now: start)
            var now = start
            while now < end {
                let wait = pacer.take(now: now)
                if wait == 0 { perMinute[Int((now - start) / (60 * second))] += 1 } else { now += wait }
            }
        }
        return perMinute
    }

    func testAFullyUsedBudgetHoldsItsRateInEveryMinuteOnOneNodeAndOnThree() {
        for nodes in [1, 3] {
            let minutes = sendGreedily(budget: 60_000, nodes: nodes, minutes: 2)
            for (index, count) in minutes.enumerated() {
                XCTAssertLessThanOrEqual(
                    count, 60_000 + nodes * 100, "\(nodes) nodes, minute \(index): at most a burst over")
                XCTAssertGreaterThan(count, 59_800, "\(nodes) nodes, minute \(index): the budget is used")
            }
        }
    }

    func testASmallBudgetSpreadsItsNotificationsOverTheMinute() {
        // 120 a minute: one every 500 ms, never two in one 500 ms window.
        var pacer = DeliveryPacer(perMinute: 120, now: 0)
        var now: UInt64 = 0
        var sent: [UInt64] = []
        while now < 60 * second {
            let wait = pacer.take(now: now)
            if wait == 0 { sent.append(now) } else { now += wait }
        }
        XCTAssertEqual(sent.count, 120)
        for (a, b) in zip(sent, sent.dropFirst()) { XCTAssertGreaterThanOrEqual(b - a, second / 2) }
    }

    func testRetuningAPacerToANewShareStartsWithOneTokenAndTheSameRateChangesNothing() {
        let pacer = PublishPacer(perMinute: 600)
        XCTAssertEqual(pacer.perMinute, 600)
        pacer.retune(perMinute: 300)
        XCTAssertEqual(pacer.perMinute, 300)
        pacer.retune(perMinute: 300)
        XCTAssertEqual(pacer.perMinute, 300)
    }

    func testEveryBudgetFollowsTheLiveNodesAndShowsItsShareInTheMetrics() throws {
        var instance = try config(#"{"notificationsPerMinute":{"fcm":600000,"apns":90}}"#)
        instance.id = instance.id.uppercased()
        let metrics = Metrics()
        let budgets = DeliveryBudgets(
            instances: [try InstanceRuntime(config: instance)], slots: nil,
            parkAfter: .milliseconds(20), metrics: metrics)
        let fcm = try XCTUnwrap(
            budgets.budget(instanceID: instance.id.lowercased(), platform: .fcm),
            "looked up by id whatever its case")
        XCTAssertNil(budgets.budget(instanceID: instance.id, platform: .web), "no budget: not paced")
        XCTAssertEqual(fcm.pacer.perMinute, 600_000)
        let labels: KeyValuePairs<String, String> = ["beams_instance": instance.id, "platform": "fcm"]
        XCTAssertEqual(metrics.value(.deliveryBudget, labels), 600_000)
        XCTAssertEqual(metrics.value(.deliveryBudgetNodeShare, labels), 600_000)
        budgets.setLiveNodes(4)
        XCTAssertEqual(fcm.pacer.perMinute, 150_000)
        XCTAssertEqual(budgets.budget(instanceID: instance.id, platform: .apns)?.pacer.perMinute, 22)
        XCTAssertEqual(metrics.value(.deliveryBudgetNodeShare, labels), 150_000)
        XCTAssertEqual(metrics.value(.deliveryBudget, labels), 600_000, "the budget itself is all nodes'")
        budgets.setLiveNodes(1)
        XCTAssertEqual(fcm.pacer.perMinute, 600_000, "a node leaving gives the others its share")
    }

    func testBudgetsFollowTheServedSetKeepingUnchangedPacersAtTheNodesShare() throws {
        let first = try config(#"{"notificationsPerMinute":{"fcm":600,"apns":90}}"#)
        var second = try config(#"{"notificationsPerMinute":{"web":60}}"#)
        second.id = "0d6e4b7a-93c1-4f25-b1aa-5c2f0e8d7a61"
        let budgets = DeliveryBudgets(
            instances: [try InstanceRuntime(config: first)], slots: nil,
            parkAfter: .milliseconds(20), metrics: Metrics())
        budgets.setLiveNodes(2)
        let apns = try XCTUnwrap(budgets.budget(instanceID: first.id, platform: .apns))
        var changed = first
        changed.quotas.notificationsPerMinute = [.apns: 90, .fcm: 1200]
        budgets.follow([changed, second])
        XCTAssertTrue(
            budgets.budget(instanceID: first.id, platform: .apns) === apns, "an unchanged budget keeps its pacer")
        XCTAssertEqual(budgets.budget(instanceID: first.id, platform: .fcm)?.perMinute, 1200)
        XCTAssertEqual(
            budgets.budget(instanceID: first.id, platform: .fcm)?.pacer.perMinute, 600,
            "a new budget starts at this node's share")
        XCTAssertEqual(budgets.budget(instanceID: second.id, platform: .web)?.perMinute, 60)
        budgets.follow([second])
        XCTAssertNil(budgets.budget(instanceID: first.id, platform: .apns), "a removed instance's budgets go")
        XCTAssertEqual(budgets.all.count, 1)
    }
}
