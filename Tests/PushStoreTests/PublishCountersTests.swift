import PushStore
import XCTest

/// The typed publish counters and their stored names: a database written before the type existed reads the same,
/// and whatever is read is written back under the name it had.
final class PublishCountersTests: XCTestCase {
    /// The names every existing database holds, each with the counter it reads as.
    let stored: [(String, PublishCounters.Counter)] = [
        ("targets", .targets),
        ("apns.accepted", .accepted(.apns)),
        ("hms.accepted", .accepted(.hms)),
        ("apns.failed.BadDeviceToken", .failed(.apns, reason: "BadDeviceToken")),
        ("fcm.failed.UNREGISTERED", .failed(.fcm, reason: "UNREGISTERED")),
        ("web.failed.HTTP 410.gone", .failed(.web, reason: "HTTP 410.gone")),
        ("devices.removed", .devicesRemoved),
        ("unifiedpush.devicesRemoved", .devicesRemovedOn(.unifiedpush)),
        ("liveActivity.tokensRemoved", .liveActivityTokensRemoved),
        ("apns.environmentRetries", .environmentRetries),
        ("devices.environmentCorrected", .environmentCorrected),
        ("estimate.remaining", .estimateRemaining),
        ("estimate.rateMilli", .estimateRateMilli),
        ("broadcast.accepted", .channelsAccepted),
        ("broadcast.failed.ChannelNotRegistered", .channelsFailed(reason: "ChannelNotRegistered")),
        ("broadcast.channel.dGVzdA==.attempts", .channelAttempts(channel: "dGVzdA==")),
        ("broadcast.channel.dGVzdA==.accepted", .channelAccepted(channel: "dGVzdA==")),
        (
            "broadcast.channel.dGVzdA==.failed.TransportError",
            .channelFailed(channel: "dGVzdA==", reason: "TransportError")
        ),
    ]

    func testEveryStoredNameReadsAsItsCounterAndIsWrittenBackUnchanged() {
        for (name, counter) in stored {
            XCTAssertEqual(PublishCounters.Counter(storedName: name), counter, name)
            XCTAssertEqual(counter.storedName, name)
        }
        let rows = Dictionary(uniqueKeysWithValues: stored.enumerated().map { ($0.element.0, Int64($0.offset + 1)) })
        XCTAssertEqual(PublishCounters(storedNames: rows).storedNames, rows)
    }

    /// A newer server's counter, a name that only looks like one, and one whose parse would not give the name
    /// back (a channel id with a `.`) are kept as they were stored, never renamed.
    func testNamesThisVersionDoesNotKnowAreKeptAsStored() {
        for name in [
            "sent", "apns.delivered", "pigeon.failed.Lost", "broadcast.channel.a.b.accepted",
            "broadcast.channel.nodot", "broadcast.channel.x.opened", "", "targets.extra", "apns.failed",
        ] {
            XCTAssertEqual(PublishCounters.Counter(storedName: name), .unrecognised(name), name)
            XCTAssertEqual(PublishCounters(storedNames: [name: 7]).storedNames, [name: 7], name)
        }
    }

    func testAddingSumsPerCounterAndReadsFailuresAndChannelsByKind() {
        var counters: PublishCounters = [.accepted(.apns): 2, .failed(.apns, reason: "Unregistered"): 1]
        counters.add([.accepted(.apns): 3, .failed(.fcm, reason: "UNREGISTERED"): 4, .targets: 10])
        counters.add(.failed(.apns, reason: "Unregistered"))
        counters.add(.channelsFailed(reason: "ChannelNotRegistered"), 2)
        counters.add(.channelAttempts(channel: "c1"), 3)
        counters.add(.channelFailed(channel: "c1", reason: "ChannelNotRegistered"))
        counters.add(.channelAttempts(channel: "c2"), 1)
        XCTAssertEqual(counters[.accepted(.apns)], 5)
        XCTAssertNil(counters[.accepted(.fcm)], "never counted: absent, not 0")
        XCTAssertEqual(counters.failures(on: .apns), ["Unregistered": 2])
        XCTAssertEqual(counters.failures(on: .fcm), ["UNREGISTERED": 4])
        XCTAssertEqual(counters.channelFailures, ["ChannelNotRegistered": 2])
        XCTAssertEqual(counters.channels["c1"]?.accepted, false)
        XCTAssertEqual(counters.channels["c1"]?.reason, "ChannelNotRegistered")
        XCTAssertEqual(counters.channels["c1"]?.attempts, 3)
        XCTAssertNil(counters.channels["c2"]?.accepted, "attempted, not answered yet")
    }

    /// Wrapping, never trapping: a hostile stored value cannot crash the process.
    func testAddingPastInt64Wraps() {
        var counters: PublishCounters = [.targets: .max]
        counters.add(.targets)
        XCTAssertEqual(counters[.targets], .min)
    }

    func testNonZeroDropsCountersAtZero() {
        let counters: PublishCounters = [.targets: 0, .accepted(.apns): 1, .estimateRemaining: -3]
        XCTAssertEqual(counters.nonZero, [.accepted(.apns): 1, .estimateRemaining: -3])
    }
}
