import Foundation

/// Which tier of the test suite this process runs in (docs/CONTRIBUTING.md, "Test tiers").
///
/// `make check` runs the XCTest cases that stay in process and sets `PUSH_TEST_TIER=check`; the Makefile's
/// `CHECK_SKIP` names the classes that start child processes (PostgreSQL clusters, the Python stand-ins, openssl,
/// python). Every way TestSupport starts a child asks `refusal(starting:)` first, so a test added to a class of the
/// fast tier that starts one fails there with the fix in its message, instead of slowly turning the fast tier into
/// the full one.
package enum TestTier {
    /// Whether this process runs the in-process tier (`PUSH_TEST_TIER=check`).
    package static var isInProcessOnly: Bool { ProcessInfo.processInfo.environment["PUSH_TEST_TIER"] == "check" }

    /// The reason starting `what` is refused in this tier, or nil when it may start.
    package static func refusal(starting what: String) -> String? {
        guard isInProcessOnly else { return nil }
        return "make check runs only in-process tests, but this test starts \(what): add its class to CHECK_SKIP "
            + "in the Makefile (it then runs in make test)"
    }
}
