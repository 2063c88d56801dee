import XCTest

// The contract suite's runners: every `test…` method of every `…Contract` class, once per backend. XCTest on Linux
// only runs methods declared in an `XCTestCase` subclass itself, so each is listed here; `ContractCoverageTests`
// fails, naming the missing lines, when a contract method has no runner.

final class DeliveryResultsContractOnSQLite: XCTestCase {
    func testUnregisteredOlderThanLastRegistrationDoesNotInvalidate() async throws {
        try await runContract(.sqlite, DeliveryResultsContract.testUnregisteredOlderThanLastRegistrationDoesNotInvalidate)
    }

    func testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration() async throws {
        try await runContract(.sqlite, DeliveryResultsContract.testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration)
    }

    func testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult() async throws {
        try await runContract(.sqlite, DeliveryResultsContract.testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult)
    }

    func testEnvironmentCorrectionAndPlainResults() async throws {
        try await runContract(.sqlite, DeliveryResultsContract.testEnvironmentCorrectionAndPlainResults)
    }

    func testReportingEventsCountOncePerDeviceAndKind() async throws {
        try await runContract(.sqlite, DeliveryResultsContract.testReportingEventsCountOncePerDeviceAndKind)
    }
}

final class DeviceRegistryContractOnSQLite: XCTestCase {
    func testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates)
    }

    func testUpdateTokenDeletesTheOtherDeviceHoldingTheToken() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testUpdateTokenDeletesTheOtherDeviceHoldingTheToken)
    }

    func testUpdateTokenReportsUnknownDeviceOrWrongPlatform() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testUpdateTokenReportsUnknownDeviceOrWrongPlatform)
    }

    func testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser)
    }

    func testRegistrationCreatesDeviceWithPlatformPrefixedID() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testRegistrationCreatesDeviceWithPlatformPrefixedID)
    }

    func testDeviceIDsAreVersion7UUIDsThatSortByCreationTime() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testDeviceIDsAreVersion7UUIDsThatSortByCreationTime)
    }

    func testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields)
    }

    func testSameTokenInAnotherInstanceIsAnotherDevice() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testSameTokenInAnotherInstanceIsAnotherDevice)
    }

    func testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne)
    }

    func testLookupsByIDAndTokenAndMissingDevices() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testLookupsByIDAndTokenAndMissingDevices)
    }

    func testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish)
    }

    func testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound)
    }

    func testUpdateMetadata() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testUpdateMetadata)
    }

    func testInterestMutationsReportMissingDevice() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testInterestMutationsReportMissingDevice)
    }

    func testAddRemoveAndSetInterestsAreIdempotent() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testAddRemoveAndSetInterestsAreIdempotent)
    }

    func testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges)
    }

    func testSetUserRulesAndLimit() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testSetUserRulesAndLimit)
    }

    func testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests)
    }

    func testBatchRegistrationIsOrderedAndIdempotent() async throws {
        try await runContract(.sqlite, DeviceRegistryContract.testBatchRegistrationIsOrderedAndIdempotent)
    }
}

final class HostileValueContractOnSQLite: XCTestCase {
    func testReportingEventDatedFarPastInt64MillisecondsIsStored() async throws {
        try await runContract(.sqlite, HostileValueContract.testReportingEventDatedFarPastInt64MillisecondsIsStored)
    }

    func testDeviceResultWithNonFiniteEvidenceDateIsStored() async throws {
        try await runContract(.sqlite, HostileValueContract.testDeviceResultWithNonFiniteEvidenceDateIsStored)
    }

    func testInterestPageWithLimitAtIntMaxDoesNotOverflow() async throws {
        try await runContract(.sqlite, HostileValueContract.testInterestPageWithLimitAtIntMaxDoesNotOverflow)
    }

    func testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping() async throws {
        try await runContract(.sqlite, HostileValueContract.testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping)
    }
}

final class ProviderTokensContractOnSQLite: XCTestCase {
    func testSwapStoresTheFirstTokenAndReadsItBack() async throws {
        try await runContract(.sqlite, ProviderTokensContract.testSwapStoresTheFirstTokenAndReadsItBack)
    }

    func testSwapAgainstAStaleReadLosesAndReturnsTheWinner() async throws {
        try await runContract(.sqlite, ProviderTokensContract.testSwapAgainstAStaleReadLosesAndReturnsTheWinner)
    }

    func testTokensAreKeptPerTeamAndKeyAndSurviveReopening() async throws {
        try await runContract(.sqlite, ProviderTokensContract.testTokensAreKeptPerTeamAndKeyAndSurviveReopening)
    }

    func testConcurrentSwapsFromTheSameReadHaveOneWinner() async throws {
        try await runContract(.sqlite, ProviderTokensContract.testConcurrentSwapsFromTheSameReadHaveOneWinner)
    }
}

final class PublishQueueContractOnSQLite: XCTestCase {
    func testChannelsPublishKeepsItsKindAndHasNoTargets() async throws {
        try await runContract(.sqlite, PublishQueueContract.testChannelsPublishKeepsItsKindAndHasNoTargets)
    }

    func testEnqueuedJobIsClaimedWithItsPayload() async throws {
        try await runContract(.sqlite, PublishQueueContract.testEnqueuedJobIsClaimedWithItsPayload)
    }

    func testTraceContextIsStoredWithTheJobAndClaimedWithIt() async throws {
        try await runContract(.sqlite, PublishQueueContract.testTraceContextIsStoredWithTheJobAndClaimedWithIt)
    }

    func testDuplicatePublishIDIsRefusedPerInstance() async throws {
        try await runContract(.sqlite, PublishQueueContract.testDuplicatePublishIDIsRefusedPerInstance)
    }

    func testClaimsOldestFirstAndSkipsLeasedJobs() async throws {
        try await runContract(.sqlite, PublishQueueContract.testClaimsOldestFirstAndSkipsLeasedJobs)
    }

    func testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest() async throws {
        try await runContract(.sqlite, PublishQueueContract.testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest)
    }

    func testLeaseHolderOnlyMayCheckpointRenewOrFinish() async throws {
        try await runContract(.sqlite, PublishQueueContract.testLeaseHolderOnlyMayCheckpointRenewOrFinish)
    }

    func testRenewedLeaseIsNotClaimable() async throws {
        try await runContract(.sqlite, PublishQueueContract.testRenewedLeaseIsNotClaimable)
    }

    func testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem() async throws {
        try await runContract(.sqlite, PublishQueueContract.testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem)
    }

    func testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults() async throws {
        try await runContract(.sqlite, PublishQueueContract.testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults)
    }

    func testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry() async throws {
        try await runContract(.sqlite, PublishQueueContract.testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry)
    }

    func testConcurrentEnqueuesAreAllCommittedAndSurviveReopen() async throws {
        try await runContract(.sqlite, PublishQueueContract.testConcurrentEnqueuesAreAllCommittedAndSurviveReopen)
    }

    func testAFailedWriteDoesNotUndoConcurrentWrites() async throws {
        try await runContract(.sqlite, PublishQueueContract.testAFailedWriteDoesNotUndoConcurrentWrites)
    }

    func testRecentPublishesNewestFirstWithCounters() async throws {
        try await runContract(.sqlite, PublishQueueContract.testRecentPublishesNewestFirstWithCounters)
    }
}

final class RetentionContractOnSQLite: XCTestCase {
    func testDevicesNobodyDeliveredToExpireWhenTheyHaveNotRegisteredAgain() async throws {
        try await runContract(.sqlite, RetentionContract.testDevicesNobodyDeliveredToExpireWhenTheyHaveNotRegisteredAgain)
    }

    func testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices() async throws {
        try await runContract(.sqlite, RetentionContract.testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices)
    }
}

final class StatisticsContractOnSQLite: XCTestCase {
    func testCountsDevicesInvalidOnesAndTheInstanceOnly() async throws {
        try await runContract(.sqlite, StatisticsContract.testCountsDevicesInvalidOnesAndTheInstanceOnly)
    }

    func testSumsTheCountersOfPublishesCreatedSinceTheGivenMoment() async throws {
        try await runContract(.sqlite, StatisticsContract.testSumsTheCountersOfPublishesCreatedSinceTheGivenMoment)
    }
}

final class StoreBackendContractOnSQLite: XCTestCase {
    func testProbeWriteSucceedsAndChangesNoData() async throws {
        try await runContract(.sqlite, StoreBackendContract.testProbeWriteSucceedsAndChangesNoData)
    }

    func testOperationsAfterCloseThrowClosed() async throws {
        try await runContract(.sqlite, StoreBackendContract.testOperationsAfterCloseThrowClosed)
    }

    func testCommittedWritesSurviveClosingAndReopening() async throws {
        try await runContract(.sqlite, StoreBackendContract.testCommittedWritesSurviveClosingAndReopening)
    }
}

final class StoreBoundsContractOnSQLite: XCTestCase {
    func testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister() async throws {
        try await runContract(.sqlite, StoreBoundsContract.testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister)
    }

    func testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused() async throws {
        try await runContract(.sqlite, StoreBoundsContract.testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused)
    }

    func testUncappedRegistrationStillCounts() async throws {
        try await runContract(.sqlite, StoreBoundsContract.testUncappedRegistrationStillCounts)
    }

    func testInterestWritesBeyondTheInstanceSubscriptionCapAreRefusedAndStoreNothing() async throws {
        try await runContract(.sqlite, StoreBoundsContract.testInterestWritesBeyondTheInstanceSubscriptionCapAreRefusedAndStoreNothing)
    }

    func testDistinctInterestNamesBeyondTheInstanceCapAreRefusedAndUnfollowedNamesFreeTheirPlace() async throws {
        try await runContract(.sqlite, StoreBoundsContract.testDistinctInterestNamesBeyondTheInstanceCapAreRefusedAndUnfollowedNamesFreeTheirPlace)
    }

    func testReportFactsNameTheDeviceThePublishAndWhetherItTargetedTheDevicesUser() async throws {
        try await runContract(.sqlite, StoreBoundsContract.testReportFactsNameTheDeviceThePublishAndWhetherItTargetedTheDevicesUser)
    }
}

final class TargetStreamContractOnSQLite: XCTestCase {
    func testInterestUnionVisitsEachFollowerOnceAcrossPages() async throws {
        try await runContract(.sqlite, TargetStreamContract.testInterestUnionVisitsEachFollowerOnceAcrossPages)
    }

    func testTargetsCarryDeviceFieldsAndSkipInvalidatedDevices() async throws {
        try await runContract(.sqlite, TargetStreamContract.testTargetsCarryDeviceFieldsAndSkipInvalidatedDevices)
    }

    func testResumingFromACursorReturnsOnlyLaterDevices() async throws {
        try await runContract(.sqlite, TargetStreamContract.testResumingFromACursorReturnsOnlyLaterDevices)
    }

    func testUnknownInterestsGiveOneEmptyLastPage() async throws {
        try await runContract(.sqlite, TargetStreamContract.testUnknownInterestsGiveOneEmptyLastPage)
    }

    func testUserTargetsAreEveryValidDeviceOfEachUser() async throws {
        try await runContract(.sqlite, TargetStreamContract.testUserTargetsAreEveryValidDeviceOfEachUser)
    }
}

final class WebhookQueueContractOnSQLite: XCTestCase {
    func testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending() async throws {
        try await runContract(.sqlite, WebhookQueueContract.testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending)
    }

    func testDueWebhookIsClaimedThenHiddenUntilItsLeaseEnds() async throws {
        try await runContract(.sqlite, WebhookQueueContract.testDueWebhookIsClaimedThenHiddenUntilItsLeaseEnds)
    }

    func testRetryDeliveredAndGaveUpOutcomes() async throws {
        try await runContract(.sqlite, WebhookQueueContract.testRetryDeliveredAndGaveUpOutcomes)
    }

    func testADeferredWebhookIsDueAgainLaterWithoutSpendingAnAttempt() async throws {
        try await runContract(.sqlite, WebhookQueueContract.testADeferredWebhookIsDueAgainLaterWithoutSpendingAnAttempt)
    }
}

final class DeliveryResultsContractInMemory: XCTestCase {
    func testUnregisteredOlderThanLastRegistrationDoesNotInvalidate() async throws {
        try await runContract(.inMemory, DeliveryResultsContract.testUnregisteredOlderThanLastRegistrationDoesNotInvalidate)
    }

    func testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration() async throws {
        try await runContract(.inMemory, DeliveryResultsContract.testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration)
    }

    func testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult() async throws {
        try await runContract(.inMemory, DeliveryResultsContract.testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult)
    }

    func testEnvironmentCorrectionAndPlainResults() async throws {
        try await runContract(.inMemory, DeliveryResultsContract.testEnvironmentCorrectionAndPlainResults)
    }

    func testReportingEventsCountOncePerDeviceAndKind() async throws {
        try await runContract(.inMemory, DeliveryResultsContract.testReportingEventsCountOncePerDeviceAndKind)
    }
}

final class DeviceRegistryContractInMemory: XCTestCase {
    func testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates)
    }

    func testUpdateTokenDeletesTheOtherDeviceHoldingTheToken() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testUpdateTokenDeletesTheOtherDeviceHoldingTheToken)
    }

    func testUpdateTokenReportsUnknownDeviceOrWrongPlatform() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testUpdateTokenReportsUnknownDeviceOrWrongPlatform)
    }

    func testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser)
    }

    func testRegistrationCreatesDeviceWithPlatformPrefixedID() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testRegistrationCreatesDeviceWithPlatformPrefixedID)
    }

    func testDeviceIDsAreVersion7UUIDsThatSortByCreationTime() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testDeviceIDsAreVersion7UUIDsThatSortByCreationTime)
    }

    func testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields)
    }

    func testSameTokenInAnotherInstanceIsAnotherDevice() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testSameTokenInAnotherInstanceIsAnotherDevice)
    }

    func testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne)
    }

    func testLookupsByIDAndTokenAndMissingDevices() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testLookupsByIDAndTokenAndMissingDevices)
    }

    func testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish)
    }

    func testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound)
    }

    func testUpdateMetadata() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testUpdateMetadata)
    }

    func testInterestMutationsReportMissingDevice() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testInterestMutationsReportMissingDevice)
    }

    func testAddRemoveAndSetInterestsAreIdempotent() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testAddRemoveAndSetInterestsAreIdempotent)
    }

    func testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges)
    }

    func testSetUserRulesAndLimit() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testSetUserRulesAndLimit)
    }

    func testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests)
    }

    func testBatchRegistrationIsOrderedAndIdempotent() async throws {
        try await runContract(.inMemory, DeviceRegistryContract.testBatchRegistrationIsOrderedAndIdempotent)
    }
}

final class HostileValueContractInMemory: XCTestCase {
    func testReportingEventDatedFarPastInt64MillisecondsIsStored() async throws {
        try await runContract(.inMemory, HostileValueContract.testReportingEventDatedFarPastInt64MillisecondsIsStored)
    }

    func testDeviceResultWithNonFiniteEvidenceDateIsStored() async throws {
        try await runContract(.inMemory, HostileValueContract.testDeviceResultWithNonFiniteEvidenceDateIsStored)
    }

    func testInterestPageWithLimitAtIntMaxDoesNotOverflow() async throws {
        try await runContract(.inMemory, HostileValueContract.testInterestPageWithLimitAtIntMaxDoesNotOverflow)
    }

    func testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping() async throws {
        try await runContract(.inMemory, HostileValueContract.testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping)
    }
}

final class ProviderTokensContractInMemory: XCTestCase {
    func testSwapStoresTheFirstTokenAndReadsItBack() async throws {
        try await runContract(.inMemory, ProviderTokensContract.testSwapStoresTheFirstTokenAndReadsItBack)
    }

    func testSwapAgainstAStaleReadLosesAndReturnsTheWinner() async throws {
        try await runContract(.inMemory, ProviderTokensContract.testSwapAgainstAStaleReadLosesAndReturnsTheWinner)
    }

    func testTokensAreKeptPerTeamAndKeyAndSurviveReopening() async throws {
        try await runContract(.inMemory, ProviderTokensContract.testTokensAreKeptPerTeamAndKeyAndSurviveReopening)
    }

    func testConcurrentSwapsFromTheSameReadHaveOneWinner() async throws {
        try await runContract(.inMemory, ProviderTokensContract.testConcurrentSwapsFromTheSameReadHaveOneWinner)
    }
}

final class PublishQueueContractInMemory: XCTestCase {
    func testChannelsPublishKeepsItsKindAndHasNoTargets() async throws {
        try await runContract(.inMemory, PublishQueueContract.testChannelsPublishKeepsItsKindAndHasNoTargets)
    }

    func testEnqueuedJobIsClaimedWithItsPayload() async throws {
        try await runContract(.inMemory, PublishQueueContract.testEnqueuedJobIsClaimedWithItsPayload)
    }

    func testTraceContextIsStoredWithTheJobAndClaimedWithIt() async throws {
        try await runContract(.inMemory, PublishQueueContract.testTraceContextIsStoredWithTheJobAndClaimedWithIt)
    }

    func testDuplicatePublishIDIsRefusedPerInstance() async throws {
        try await runContract(.inMemory, PublishQueueContract.testDuplicatePublishIDIsRefusedPerInstance)
    }

    func testClaimsOldestFirstAndSkipsLeasedJobs() async throws {
        try await runContract(.inMemory, PublishQueueContract.testClaimsOldestFirstAndSkipsLeasedJobs)
    }

    func testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest() async throws {
        try await runContract(.inMemory, PublishQueueContract.testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest)
    }

    func testLeaseHolderOnlyMayCheckpointRenewOrFinish() async throws {
        try await runContract(.inMemory, PublishQueueContract.testLeaseHolderOnlyMayCheckpointRenewOrFinish)
    }

    func testRenewedLeaseIsNotClaimable() async throws {
        try await runContract(.inMemory, PublishQueueContract.testRenewedLeaseIsNotClaimable)
    }

    func testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem() async throws {
        try await runContract(.inMemory, PublishQueueContract.testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem)
    }

    func testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults() async throws {
        try await runContract(.inMemory, PublishQueueContract.testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults)
    }

    func testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry() async throws {
        try await runContract(.inMemory, PublishQueueContract.testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry)
    }

    func testConcurrentEnqueuesAreAllCommittedAndSurviveReopen() async throws {
        try await runContract(.inMemory, PublishQueueContract.testConcurrentEnqueuesAreAllCommittedAndSurviveReopen)
    }

    func testAFailedWriteDoesNotUndoConcurrentWrites() async throws {
        try await runContract(.inMemory, PublishQueueContract.testAFailedWriteDoesNotUndoConcurrentWrites)
    }

    func testRecentPublishesNewestFirstWithCounters() async throws {
        try await runContract(.inMemory, PublishQueueContract.testRecentPublishesNewestFirstWithCounters)
    }
}

final class RetentionContractInMemory: XCTestCase {
    func testDevicesNobodyDeliveredToExpireWhenTheyHaveNotRegisteredAgain() async throws {
        try await runContract(.inMemory, RetentionContract.testDevicesNobodyDeliveredToExpireWhenTheyHaveNotRegisteredAgain)
    }

    func testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices() async throws {
        try await runContract(.inMemory, RetentionContract.testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices)
    }
}

final class StatisticsContractInMemory: XCTestCase {
    func testCountsDevicesInvalidOnesAndTheInstanceOnly() async throws {
        try await runContract(.inMemory, StatisticsContract.testCountsDevicesInvalidOnesAndTheInstanceOnly)
    }

    func testSumsTheCountersOfPublishesCreatedSinceTheGivenMoment() async throws {
        try await runContract(.inMemory, StatisticsContract.testSumsTheCountersOfPublishesCreatedSinceTheGivenMoment)
    }
}

final class StoreBackendContractInMemory: XCTestCase {
    func testProbeWriteSucceedsAndChangesNoData() async throws {
        try await runContract(.inMemory, StoreBackendContract.testProbeWriteSucceedsAndChangesNoData)
    }

    func testOperationsAfterCloseThrowClosed() async throws {
        try await runContract(.inMemory, StoreBackendContract.testOperationsAfterCloseThrowClosed)
    }

    func testCommittedWritesSurviveClosingAndReopening() async throws {
        try await runContract(.inMemory, StoreBackendContract.testCommittedWritesSurviveClosingAndReopening)
    }
}

final class StoreBoundsContractInMemory: XCTestCase {
    func testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister() async throws {
        try await runContract(.inMemory, StoreBoundsContract.testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister)
    }

    func testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused() async throws {
        try await runContract(.inMemory, StoreBoundsContract.testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused)
    }

    func testUncappedRegistrationStillCounts() async throws {
        try await runContract(.inMemory, StoreBoundsContract.testUncappedRegistrationStillCounts)
    }

    func testInterestWritesBeyondTheInstanceSubscriptionCapAreRefusedAndStoreNothing() async throws {
        try await runContract(.inMemory, StoreBoundsContract.testInterestWritesBeyondTheInstanceSubscriptionCapAreRefusedAndStoreNothing)
    }

    func testDistinctInterestNamesBeyondTheInstanceCapAreRefusedAndUnfollowedNamesFreeTheirPlace() async throws {
        try await runContract(.inMemory, StoreBoundsContract.testDistinctInterestNamesBeyondTheInstanceCapAreRefusedAndUnfollowedNamesFreeTheirPlace)
    }

    func testReportFactsNameTheDeviceThePublishAndWhetherItTargetedTheDevicesUser() async throws {
        try await runContract(.inMemory, StoreBoundsContract.testReportFactsNameTheDeviceThePublishAndWhetherItTargetedTheDevicesUser)
    }
}

final class TargetStreamContractInMemory: XCTestCase {
    func testInterestUnionVisitsEachFollowerOnceAcrossPages() async throws {
        try await runContract(.inMemory, TargetStreamContract.testInterestUnionVisitsEachFollowerOnceAcrossPages)
    }

    func testTargetsCarryDeviceFieldsAndSkipInvalidatedDevices() async throws {
        try await runContract(.inMemory, TargetStreamContract.testTargetsCarryDeviceFieldsAndSkipInvalidatedDevices)
    }

    func testResumingFromACursorReturnsOnlyLaterDevices() async throws {
        try await runContract(.inMemory, TargetStreamContract.testResumingFromACursorReturnsOnlyLaterDevices)
    }

    func testUnknownInterestsGiveOneEmptyLastPage() async throws {
        try await runContract(.inMemory, TargetStreamContract.testUnknownInterestsGiveOneEmptyLastPage)
    }

    func testUserTargetsAreEveryValidDeviceOfEachUser() async throws {
        try await runContract(.inMemory, TargetStreamContract.testUserTargetsAreEveryValidDeviceOfEachUser)
    }
}

final class WebhookQueueContractInMemory: XCTestCase {
    func testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending() async throws {
        try await runContract(.inMemory, WebhookQueueContract.testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending)
    }

    func testDueWebhookIsClaimedThenHiddenUntilItsLeaseEnds() async throws {
        try await runContract(.inMemory, WebhookQueueContract.testDueWebhookIsClaimedThenHiddenUntilItsLeaseEnds)
    }

    func testRetryDeliveredAndGaveUpOutcomes() async throws {
        try await runContract(.inMemory, WebhookQueueContract.testRetryDeliveredAndGaveUpOutcomes)
    }

    func testADeferredWebhookIsDueAgainLaterWithoutSpendingAnAttempt() async throws {
        try await runContract(.inMemory, WebhookQueueContract.testADeferredWebhookIsDueAgainLaterWithoutSpendingAnAttempt)
    }
}

final class ScheduledPublishContractOnSQLite: XCTestCase {
    func testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere() async throws {
        try await runContract(.sqlite, ScheduledPublishContract.testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere)
    }

    func testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue() async throws {
        try await runContract(.sqlite, ScheduledPublishContract.testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue)
    }

    func testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker() async throws {
        try await runContract(.sqlite, ScheduledPublishContract.testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker)
    }

    func testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime() async throws {
        try await runContract(.sqlite, ScheduledPublishContract.testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime)
    }

    func testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState() async throws {
        try await runContract(.sqlite, ScheduledPublishContract.testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState)
    }

    func testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets() async throws {
        try await runContract(.sqlite, ScheduledPublishContract.testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets)
    }
}

final class ScheduledPublishContractInMemory: XCTestCase {
    func testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere() async throws {
        try await runContract(.inMemory, ScheduledPublishContract.testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere)
    }

    func testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue() async throws {
        try await runContract(.inMemory, ScheduledPublishContract.testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue)
    }

    func testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker() async throws {
        try await runContract(.inMemory, ScheduledPublishContract.testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker)
    }

    func testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime() async throws {
        try await runContract(.inMemory, ScheduledPublishContract.testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime)
    }

    func testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState() async throws {
        try await runContract(.inMemory, ScheduledPublishContract.testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState)
    }

    func testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets() async throws {
        try await runContract(.inMemory, ScheduledPublishContract.testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets)
    }
}

final class ShardedQueueContractOnSQLite: XCTestCase {
    func testLargePublishReachesEachDeviceOnceWhetherSplitOrWhole() async throws {
        try await runContract(.sqlite, ShardedQueueContract.testLargePublishReachesEachDeviceOnceWhetherSplitOrWhole)
    }

    func testTakenOverShardResumesAtItsCheckpointWithTotalsNotSums() async throws {
        try await runContract(.sqlite, ShardedQueueContract.testTakenOverShardResumesAtItsCheckpointWithTotalsNotSums)
    }
}

final class ShardedQueueContractOnInMemory: XCTestCase {
    func testLargePublishReachesEachDeviceOnceWhetherSplitOrWhole() async throws {
        try await runContract(.inMemory, ShardedQueueContract.testLargePublishReachesEachDeviceOnceWhetherSplitOrWhole)
    }

    func testTakenOverShardResumesAtItsCheckpointWithTotalsNotSums() async throws {
        try await runContract(.inMemory, ShardedQueueContract.testTakenOverShardResumesAtItsCheckpointWithTotalsNotSums)
    }
}

final class InvalidationLogContractOnSQLite: XCTestCase {
    func testDeletingADeviceOrAUserLogsEachDeviceAsRemoved() async throws {
        try await runContract(.sqlite, InvalidationLogContract.testDeletingADeviceOrAUserLogsEachDeviceAsRemoved)
    }

    func testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp() async throws {
        try await runContract(.sqlite, InvalidationLogContract.testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp)
    }

    func testResultThatDoesNotInvalidateIsNotLogged() async throws {
        try await runContract(.sqlite, InvalidationLogContract.testResultThatDoesNotInvalidateIsNotLogged)
    }

    func testNotifierSeesEachInvalidationUntilMarked() async throws {
        try await runContract(.sqlite, InvalidationLogContract.testNotifierSeesEachInvalidationUntilMarked)
    }

    func testPurgeDropsOldRowsAndRowsOverTheInstanceCap() async throws {
        try await runContract(.sqlite, InvalidationLogContract.testPurgeDropsOldRowsAndRowsOverTheInstanceCap)
    }
}

final class InvalidationLogContractOnInMemory: XCTestCase {
    func testDeletingADeviceOrAUserLogsEachDeviceAsRemoved() async throws {
        try await runContract(.inMemory, InvalidationLogContract.testDeletingADeviceOrAUserLogsEachDeviceAsRemoved)
    }

    func testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp() async throws {
        try await runContract(.inMemory, InvalidationLogContract.testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp)
    }

    func testResultThatDoesNotInvalidateIsNotLogged() async throws {
        try await runContract(.inMemory, InvalidationLogContract.testResultThatDoesNotInvalidateIsNotLogged)
    }

    func testNotifierSeesEachInvalidationUntilMarked() async throws {
        try await runContract(.inMemory, InvalidationLogContract.testNotifierSeesEachInvalidationUntilMarked)
    }

    func testPurgeDropsOldRowsAndRowsOverTheInstanceCap() async throws {
        try await runContract(.inMemory, InvalidationLogContract.testPurgeDropsOldRowsAndRowsOverTheInstanceCap)
    }
}

final class BeamsForwardContractOnSQLite: XCTestCase {
    func testAPublishForwardCommitsWithItsJobAndIsClaimedOnceUntilItsLeaseEnds() async throws {
        try await runContract(.sqlite, BeamsForwardContract.testAPublishForwardCommitsWithItsJobAndIsClaimedOnceUntilItsLeaseEnds)
    }

    func testADuplicatePublishQueuesNoSecondForwardAndAPublishWithoutOneQueuesNone() async throws {
        try await runContract(.sqlite, BeamsForwardContract.testADuplicatePublishQueuesNoSecondForwardAndAPublishWithoutOneQueuesNone)
    }

    func testARetirementIsQueuedOncePerBeamsDeviceAndOutcomesMoveOrEndIt() async throws {
        try await runContract(.sqlite, BeamsForwardContract.testARetirementIsQueuedOncePerBeamsDeviceAndOutcomesMoveOrEndIt)
    }
}

final class BeamsForwardContractOnInMemory: XCTestCase {
    func testAPublishForwardCommitsWithItsJobAndIsClaimedOnceUntilItsLeaseEnds() async throws {
        try await runContract(.inMemory, BeamsForwardContract.testAPublishForwardCommitsWithItsJobAndIsClaimedOnceUntilItsLeaseEnds)
    }

    func testADuplicatePublishQueuesNoSecondForwardAndAPublishWithoutOneQueuesNone() async throws {
        try await runContract(.inMemory, BeamsForwardContract.testADuplicatePublishQueuesNoSecondForwardAndAPublishWithoutOneQueuesNone)
    }

    func testARetirementIsQueuedOncePerBeamsDeviceAndOutcomesMoveOrEndIt() async throws {
        try await runContract(.inMemory, BeamsForwardContract.testARetirementIsQueuedOncePerBeamsDeviceAndOutcomesMoveOrEndIt)
    }
}

final class QuotaContractOnSQLite: XCTestCase {
    func testTheDailyQuotaRefusesThePublishPastItStoringNothingAndResetsAtMidnightUTC() async throws {
        try await runContract(.sqlite, QuotaContract.testTheDailyQuotaRefusesThePublishPastItStoringNothingAndResetsAtMidnightUTC)
    }

    func testQuotaUsageCountsTheInstancesDevices() async throws {
        try await runContract(.sqlite, QuotaContract.testQuotaUsageCountsTheInstancesDevices)
    }
}

final class QuotaContractInMemory: XCTestCase {
    func testTheDailyQuotaRefusesThePublishPastItStoringNothingAndResetsAtMidnightUTC() async throws {
        try await runContract(.inMemory, QuotaContract.testTheDailyQuotaRefusesThePublishPastItStoringNothingAndResetsAtMidnightUTC)
    }

    func testQuotaUsageCountsTheInstancesDevices() async throws {
        try await runContract(.inMemory, QuotaContract.testQuotaUsageCountsTheInstancesDevices)
    }
}

final class APIKeysContractOnSQLite: XCTestCase {
    func testKeysAreStoredPerInstanceAndSurviveReopening() async throws {
        try await runContract(.sqlite, APIKeysContract.testKeysAreStoredPerInstanceAndSurviveReopening)
    }

    func testRollRetiresTheOldKeyAndStoresTheReplacementTogether() async throws {
        try await runContract(.sqlite, APIKeysContract.testRollRetiresTheOldKeyAndStoresTheReplacementTogether)
    }

    func testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward() async throws {
        try await runContract(.sqlite, APIKeysContract.testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward)
    }
}

final class APIKeysContractInMemory: XCTestCase {
    func testKeysAreStoredPerInstanceAndSurviveReopening() async throws {
        try await runContract(.inMemory, APIKeysContract.testKeysAreStoredPerInstanceAndSurviveReopening)
    }

    func testRollRetiresTheOldKeyAndStoresTheReplacementTogether() async throws {
        try await runContract(.inMemory, APIKeysContract.testRollRetiresTheOldKeyAndStoresTheReplacementTogether)
    }

    func testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward() async throws {
        try await runContract(.inMemory, APIKeysContract.testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward)
    }
}

final class AuditLogContractOnSQLite: XCTestCase {
    func testAnEntryIsWrittenWithTheChangeAndAFailedChangeWritesNone() async throws {
        try await runContract(.sqlite, AuditLogContract.testAnEntryIsWrittenWithTheChangeAndAFailedChangeWritesNone)
    }

    func testRetentionPruneRemovesOnlyEntriesOlderThanTheCutoffUpToTheLimit() async throws {
        try await runContract(.sqlite, AuditLogContract.testRetentionPruneRemovesOnlyEntriesOlderThanTheCutoffUpToTheLimit)
    }

    func testAUserDeletionAndACancelWriteTheirEntryAndACancelOfNothingWritesNone() async throws {
        try await runContract(.sqlite, AuditLogContract.testAUserDeletionAndACancelWriteTheirEntryAndACancelOfNothingWritesNone)
    }

    func testTheServerWideLogListsEveryInstanceInOrderAndFiltersByAction() async throws {
        try await runContract(.sqlite, AuditLogContract.testTheServerWideLogListsEveryInstanceInOrderAndFiltersByAction)
    }

    func testAnImportBatchWritesItsEntryInItsTransactionAndADryRunWritesNone() async throws {
        try await runContract(.sqlite, AuditLogContract.testAnImportBatchWritesItsEntryInItsTransactionAndADryRunWritesNone)
    }
}

final class AuditLogContractInMemory: XCTestCase {
    func testAnEntryIsWrittenWithTheChangeAndAFailedChangeWritesNone() async throws {
        try await runContract(.inMemory, AuditLogContract.testAnEntryIsWrittenWithTheChangeAndAFailedChangeWritesNone)
    }

    func testTheServerWideLogListsEveryInstanceInOrderAndFiltersByAction() async throws {
        try await runContract(.inMemory, AuditLogContract.testTheServerWideLogListsEveryInstanceInOrderAndFiltersByAction)
    }

    func testAnImportBatchWritesItsEntryInItsTransactionAndADryRunWritesNone() async throws {
        try await runContract(.inMemory, AuditLogContract.testAnImportBatchWritesItsEntryInItsTransactionAndADryRunWritesNone)
    }

    func testRetentionPruneRemovesOnlyEntriesOlderThanTheCutoffUpToTheLimit() async throws {
        try await runContract(.inMemory, AuditLogContract.testRetentionPruneRemovesOnlyEntriesOlderThanTheCutoffUpToTheLimit)
    }

    func testAUserDeletionAndACancelWriteTheirEntryAndACancelOfNothingWritesNone() async throws {
        try await runContract(.inMemory, AuditLogContract.testAUserDeletionAndACancelWriteTheirEntryAndACancelOfNothingWritesNone)
    }
}

final class StoredInstancesContractOnSQLite: XCTestCase {
    func testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing() async throws {
        try await runContract(.sqlite, StoredInstancesContract.testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing)
    }

    func testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain() async throws {
        try await runContract(.sqlite, StoredInstancesContract.testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain)
    }
}

final class StoredInstancesContractInMemory: XCTestCase {
    func testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing() async throws {
        try await runContract(.inMemory, StoredInstancesContract.testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing)
    }

    func testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain() async throws {
        try await runContract(.inMemory, StoredInstancesContract.testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain)
    }
}
