import XCTest

// Runners of `LiveActivityContract` on every backend (see ContractRunners.swift).

final class LiveActivityContractOnSQLite: XCTestCase {
    func testStartTokensUpsertPerAttributesTypeAndAreBounded() async throws {
        try await runContract(.sqlite, LiveActivityContract.testStartTokensUpsertPerAttributesTypeAndAreBounded)
    }

    func testUpdateTokensUpsertPerActivityAndExpiredOnesDoNotCountAgainstTheBound() async throws {
        try await runContract(.sqlite, LiveActivityContract.testUpdateTokensUpsertPerActivityAndExpiredOnesDoNotCountAgainstTheBound)
    }

    func testTargetsAreTheMatchingUnexpiredRowsOfValidDevicesInRefOrder() async throws {
        try await runContract(.sqlite, LiveActivityContract.testTargetsAreTheMatchingUnexpiredRowsOfValidDevicesInRefOrder)
    }

    func testDeadTokensAreDeletedUnlessStoredAgainAndDevicesTakeTheirRowsAlong() async throws {
        try await runContract(.sqlite, LiveActivityContract.testDeadTokensAreDeletedUnlessStoredAgainAndDevicesTakeTheirRowsAlong)
    }

    func testPurgeDeletesExpiredUpdateTokensInSlicesAndKeepsStartTokens() async throws {
        try await runContract(.sqlite, LiveActivityContract.testPurgeDeletesExpiredUpdateTokensInSlicesAndKeepsStartTokens)
    }

    func testRowsSurviveARestartAndFcmDevicesHaveNone() async throws {
        try await runContract(.sqlite, LiveActivityContract.testRowsSurviveARestartAndFcmDevicesHaveNone)
    }
}

final class LiveActivityContractInMemory: XCTestCase {
    func testStartTokensUpsertPerAttributesTypeAndAreBounded() async throws {
        try await runContract(.inMemory, LiveActivityContract.testStartTokensUpsertPerAttributesTypeAndAreBounded)
    }

    func testUpdateTokensUpsertPerActivityAndExpiredOnesDoNotCountAgainstTheBound() async throws {
        try await runContract(.inMemory, LiveActivityContract.testUpdateTokensUpsertPerActivityAndExpiredOnesDoNotCountAgainstTheBound)
    }

    func testTargetsAreTheMatchingUnexpiredRowsOfValidDevicesInRefOrder() async throws {
        try await runContract(.inMemory, LiveActivityContract.testTargetsAreTheMatchingUnexpiredRowsOfValidDevicesInRefOrder)
    }

    func testDeadTokensAreDeletedUnlessStoredAgainAndDevicesTakeTheirRowsAlong() async throws {
        try await runContract(.inMemory, LiveActivityContract.testDeadTokensAreDeletedUnlessStoredAgainAndDevicesTakeTheirRowsAlong)
    }

    func testPurgeDeletesExpiredUpdateTokensInSlicesAndKeepsStartTokens() async throws {
        try await runContract(.inMemory, LiveActivityContract.testPurgeDeletesExpiredUpdateTokensInSlicesAndKeepsStartTokens)
    }

    func testRowsSurviveARestartAndFcmDevicesHaveNone() async throws {
        try await runContract(.inMemory, LiveActivityContract.testRowsSurviveARestartAndFcmDevicesHaveNone)
    }
}

final class LiveActivityContractOnPostgreSQL: XCTestCase {
    func testStartTokensUpsertPerAttributesTypeAndAreBounded() async throws {
        try await runContract(.postgresql, LiveActivityContract.testStartTokensUpsertPerAttributesTypeAndAreBounded)
    }

    func testUpdateTokensUpsertPerActivityAndExpiredOnesDoNotCountAgainstTheBound() async throws {
        try await runContract(.postgresql, LiveActivityContract.testUpdateTokensUpsertPerActivityAndExpiredOnesDoNotCountAgainstTheBound)
    }

    func testTargetsAreTheMatchingUnexpiredRowsOfValidDevicesInRefOrder() async throws {
        try await runContract(.postgresql, LiveActivityContract.testTargetsAreTheMatchingUnexpiredRowsOfValidDevicesInRefOrder)
    }

    func testDeadTokensAreDeletedUnlessStoredAgainAndDevicesTakeTheirRowsAlong() async throws {
        try await runContract(.postgresql, LiveActivityContract.testDeadTokensAreDeletedUnlessStoredAgainAndDevicesTakeTheirRowsAlong)
    }

    func testPurgeDeletesExpiredUpdateTokensInSlicesAndKeepsStartTokens() async throws {
        try await runContract(.postgresql, LiveActivityContract.testPurgeDeletesExpiredUpdateTokensInSlicesAndKeepsStartTokens)
    }

    func testRowsSurviveARestartAndFcmDevicesHaveNone() async throws {
        try await runContract(.postgresql, LiveActivityContract.testRowsSurviveARestartAndFcmDevicesHaveNone)
    }
}
