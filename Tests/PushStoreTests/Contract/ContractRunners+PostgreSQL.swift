import XCTest

// The contract suite's runners on PostgreSQL (see ContractRunners.swift): every case runs against a database of its
// own in the test process's throwaway cluster (TestSupport's `PostgreSQLCluster`). Without PostgreSQL installed
// they skip, except in CI (`CI=true`), where they fail.

final class DeliveryResultsContractOnPostgreSQL: XCTestCase {
    func testUnregisteredOlderThanLastRegistrationDoesNotInvalidate() async throws {
        try await runContract(.postgresql, DeliveryResultsContract.testUnregisteredOlderThanLastRegistrationDoesNotInvalidate)
    }

    func testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration() async throws {
        try await runContract(.postgresql, DeliveryResultsContract.testUnregisteredLaterThanLastRegistrationInvalidatesUntilReRegistration)
    }

    func testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult() async throws {
        try await runContract(.postgresql, DeliveryResultsContract.testBadTokenInvalidatesUnlessDeviceRegisteredAfterTheResult)
    }

    func testEnvironmentCorrectionAndPlainResults() async throws {
        try await runContract(.postgresql, DeliveryResultsContract.testEnvironmentCorrectionAndPlainResults)
    }

    func testReportingEventsCountOncePerDeviceAndKind() async throws {
        try await runContract(.postgresql, DeliveryResultsContract.testReportingEventsCountOncePerDeviceAndKind)
    }
}

final class DeviceRegistryContractOnPostgreSQL: XCTestCase {
    func testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testUpdateTokenKeepsDeviceInterestsAndUserAndRevalidates)
    }

    func testUpdateTokenDeletesTheOtherDeviceHoldingTheToken() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testUpdateTokenDeletesTheOtherDeviceHoldingTheToken)
    }

    func testUpdateTokenReportsUnknownDeviceOrWrongPlatform() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testUpdateTokenReportsUnknownDeviceOrWrongPlatform)
    }

    func testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testUpdateTokenRefusesATokenOfALiveDeviceBoundToAnotherUser)
    }

    func testRegistrationCreatesDeviceWithPlatformPrefixedID() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testRegistrationCreatesDeviceWithPlatformPrefixedID)
    }

    func testDeviceIDsAreVersion7UUIDsThatSortByCreationTime() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testDeviceIDsAreVersion7UUIDsThatSortByCreationTime)
    }

    func testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testReRegistrationKeepsIDInterestsAndUserAndUpdatesFields)
    }

    func testSameTokenInAnotherInstanceIsAnotherDevice() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testSameTokenInAnotherInstanceIsAnotherDevice)
    }

    func testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testDefaultedEnvironmentNeverOverwritesDeclaredOrCorrectedOne)
    }

    func testLookupsByIDAndTokenAndMissingDevices() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testLookupsByIDAndTokenAndMissingDevices)
    }

    func testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testDeviceRefNamesTheDeviceForAResultRecordedOutsideAPublish)
    }

    func testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testDeleteDeviceDropsInterestsAndUserAndReportsWhetherFound)
    }

    func testUpdateMetadata() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testUpdateMetadata)
    }

    func testInterestMutationsReportMissingDevice() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testInterestMutationsReportMissingDevice)
    }

    func testAddRemoveAndSetInterestsAreIdempotent() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testAddRemoveAndSetInterestsAreIdempotent)
    }

    func testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testInterestPagingVisitsEveryInterestOnceAndCursorSurvivesChanges)
    }

    func testSetUserRulesAndLimit() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testSetUserRulesAndLimit)
    }

    func testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testDeleteUserRemovesOnlyThatUsersDevicesAndTheirInterests)
    }

    func testBatchRegistrationIsOrderedAndIdempotent() async throws {
        try await runContract(.postgresql, DeviceRegistryContract.testBatchRegistrationIsOrderedAndIdempotent)
    }
}

final class HostileValueContractOnPostgreSQL: XCTestCase {
    func testReportingEventDatedFarPastInt64MillisecondsIsStored() async throws {
        try await runContract(.postgresql, HostileValueContract.testReportingEventDatedFarPastInt64MillisecondsIsStored)
    }

    func testDeviceResultWithNonFiniteEvidenceDateIsStored() async throws {
        try await runContract(.postgresql, HostileValueContract.testDeviceResultWithNonFiniteEvidenceDateIsStored)
    }

    func testInterestPageWithLimitAtIntMaxDoesNotOverflow() async throws {
        try await runContract(.postgresql, HostileValueContract.testInterestPageWithLimitAtIntMaxDoesNotOverflow)
    }

    func testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping() async throws {
        try await runContract(.postgresql, HostileValueContract.testLeasesPastInt64MillisecondsSaturateInsteadOfTrapping)
    }
}

final class ProviderTokensContractOnPostgreSQL: XCTestCase {
    func testSwapStoresTheFirstTokenAndReadsItBack() async throws {
        try await runContract(.postgresql, ProviderTokensContract.testSwapStoresTheFirstTokenAndReadsItBack)
    }

    func testSwapAgainstAStaleReadLosesAndReturnsTheWinner() async throws {
        try await runContract(.postgresql, ProviderTokensContract.testSwapAgainstAStaleReadLosesAndReturnsTheWinner)
    }

    func testTokensAreKeptPerTeamAndKeyAndSurviveReopening() async throws {
        try await runContract(.postgresql, ProviderTokensContract.testTokensAreKeptPerTeamAndKeyAndSurviveReopening)
    }

    func testConcurrentSwapsFromTheSameReadHaveOneWinner() async throws {
        try await runContract(.postgresql, ProviderTokensContract.testConcurrentSwapsFromTheSameReadHaveOneWinner)
    }
}

final class PublishQueueContractOnPostgreSQL: XCTestCase {
    func testChannelsPublishKeepsItsKindAndHasNoTargets() async throws {
        try await runContract(.postgresql, PublishQueueContract.testChannelsPublishKeepsItsKindAndHasNoTargets)
    }

    func testEnqueuedJobIsClaimedWithItsPayload() async throws {
        try await runContract(.postgresql, PublishQueueContract.testEnqueuedJobIsClaimedWithItsPayload)
    }

    func testTraceContextIsStoredWithTheJobAndClaimedWithIt() async throws {
        try await runContract(.postgresql, PublishQueueContract.testTraceContextIsStoredWithTheJobAndClaimedWithIt)
    }

    func testDuplicatePublishIDIsRefusedPerInstance() async throws {
        try await runContract(.postgresql, PublishQueueContract.testDuplicatePublishIDIsRefusedPerInstance)
    }

    func testClaimsOldestFirstAndSkipsLeasedJobs() async throws {
        try await runContract(.postgresql, PublishQueueContract.testClaimsOldestFirstAndSkipsLeasedJobs)
    }

    func testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest() async throws {
        try await runContract(.postgresql, PublishQueueContract.testClaimPrefersTheInstanceWithFewestRunsOnTheNodeThenTheOldest)
    }

    func testLeaseHolderOnlyMayCheckpointRenewOrFinish() async throws {
        try await runContract(.postgresql, PublishQueueContract.testLeaseHolderOnlyMayCheckpointRenewOrFinish)
    }

    func testRenewedLeaseIsNotClaimable() async throws {
        try await runContract(.postgresql, PublishQueueContract.testRenewedLeaseIsNotClaimable)
    }

    func testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem() async throws {
        try await runContract(.postgresql, PublishQueueContract.testAnsweredTargetsAboveTheCursorAreRememberedUntilTheCursorPassesThem)
    }

    func testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults() async throws {
        try await runContract(.postgresql, PublishQueueContract.testCheckpointAddsCountersKeepsCursorMonotonicAndAppliesResults)
    }

    func testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry() async throws {
        try await runContract(.postgresql, PublishQueueContract.testCrashedJobResumesFromCheckpointAfterReopenAndLeaseExpiry)
    }

    func testConcurrentEnqueuesAreAllCommittedAndSurviveReopen() async throws {
        try await runContract(.postgresql, PublishQueueContract.testConcurrentEnqueuesAreAllCommittedAndSurviveReopen)
    }

    func testAFailedWriteDoesNotUndoConcurrentWrites() async throws {
        try await runContract(.postgresql, PublishQueueContract.testAFailedWriteDoesNotUndoConcurrentWrites)
    }

    func testRecentPublishesNewestFirstWithCounters() async throws {
        try await runContract(.postgresql, PublishQueueContract.testRecentPublishesNewestFirstWithCounters)
    }
}

final class RetentionContractOnPostgreSQL: XCTestCase {
    func testDevicesNobodyDeliveredToExpireWhenTheyHaveNotRegisteredAgain() async throws {
        try await runContract(.postgresql, RetentionContract.testDevicesNobodyDeliveredToExpireWhenTheyHaveNotRegisteredAgain)
    }

    func testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices() async throws {
        try await runContract(.postgresql, RetentionContract.testPurgeDeletesOnlyOldEndedHistoryInBoundedSlices)
    }
}

final class ScheduledPublishContractOnPostgreSQL: XCTestCase {
    func testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere() async throws {
        try await runContract(.postgresql, ScheduledPublishContract.testRenewingALeaseTellsItsHolderOfACancelMadeElsewhere)
    }

    func testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue() async throws {
        try await runContract(.postgresql, ScheduledPublishContract.testScheduledJobIsNotClaimableBeforeItsTimeAndIsReportedAsNextDue)
    }

    func testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker() async throws {
        try await runContract(.postgresql, ScheduledPublishContract.testCancellingAQueuedPublishEndsItAndARunningOneIsMarkedForItsWorker)
    }

    func testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime() async throws {
        try await runContract(.postgresql, ScheduledPublishContract.testRescheduleRestartsTheCursorKeepsCountersAndWaitsForItsTime)
    }

    func testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState() async throws {
        try await runContract(.postgresql, ScheduledPublishContract.testExpiredAndCancelledEndStatesSurviveReopeningAndAreCountedByState)
    }

    func testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets() async throws {
        try await runContract(.postgresql, ScheduledPublishContract.testDeviceTimeZoneIsKeptByReRegistrationAndCarriedByTargets)
    }
}

final class StatisticsContractOnPostgreSQL: XCTestCase {
    func testCountsDevicesInvalidOnesAndTheInstanceOnly() async throws {
        try await runContract(.postgresql, StatisticsContract.testCountsDevicesInvalidOnesAndTheInstanceOnly)
    }

    func testSumsTheCountersOfPublishesCreatedSinceTheGivenMoment() async throws {
        try await runContract(.postgresql, StatisticsContract.testSumsTheCountersOfPublishesCreatedSinceTheGivenMoment)
    }
}

final class StoreBackendContractOnPostgreSQL: XCTestCase {
    func testProbeWriteSucceedsAndChangesNoData() async throws {
        try await runContract(.postgresql, StoreBackendContract.testProbeWriteSucceedsAndChangesNoData)
    }

    func testOperationsAfterCloseThrowClosed() async throws {
        try await runContract(.postgresql, StoreBackendContract.testOperationsAfterCloseThrowClosed)
    }

    func testCommittedWritesSurviveClosingAndReopening() async throws {
        try await runContract(.postgresql, StoreBackendContract.testCommittedWritesSurviveClosingAndReopening)
    }
}

final class StoreBoundsContractOnPostgreSQL: XCTestCase {
    func testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister() async throws {
        try await runContract(.postgresql, StoreBoundsContract.testNewTokenBeyondTheInstanceCapIsRefusedWhileKnownTokensStillReRegister)
    }

    func testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused() async throws {
        try await runContract(.postgresql, StoreBoundsContract.testTheCountFollowsEveryKindOfDeletionSoFreedPlacesCanBeReused)
    }

    func testUncappedRegistrationStillCounts() async throws {
        try await runContract(.postgresql, StoreBoundsContract.testUncappedRegistrationStillCounts)
    }

    func testInterestWritesBeyondTheInstanceSubscriptionCapAreRefusedAndStoreNothing() async throws {
        try await runContract(.postgresql, StoreBoundsContract.testInterestWritesBeyondTheInstanceSubscriptionCapAreRefusedAndStoreNothing)
    }

    func testDistinctInterestNamesBeyondTheInstanceCapAreRefusedAndUnfollowedNamesFreeTheirPlace() async throws {
        try await runContract(.postgresql, StoreBoundsContract.testDistinctInterestNamesBeyondTheInstanceCapAreRefusedAndUnfollowedNamesFreeTheirPlace)
    }

    func testReportFactsNameTheDeviceThePublishAndWhetherItTargetedTheDevicesUser() async throws {
        try await runContract(.postgresql, StoreBoundsContract.testReportFactsNameTheDeviceThePublishAndWhetherItTargetedTheDevicesUser)
    }
}

final class TargetStreamContractOnPostgreSQL: XCTestCase {
    func testInterestUnionVisitsEachFollowerOnceAcrossPages() async throws {
        try await runContract(.postgresql, TargetStreamContract.testInterestUnionVisitsEachFollowerOnceAcrossPages)
    }

    func testTargetsCarryDeviceFieldsAndSkipInvalidatedDevices() async throws {
        try await runContract(.postgresql, TargetStreamContract.testTargetsCarryDeviceFieldsAndSkipInvalidatedDevices)
    }

    func testResumingFromACursorReturnsOnlyLaterDevices() async throws {
        try await runContract(.postgresql, TargetStreamContract.testResumingFromACursorReturnsOnlyLaterDevices)
    }

    func testUnknownInterestsGiveOneEmptyLastPage() async throws {
        try await runContract(.postgresql, TargetStreamContract.testUnknownInterestsGiveOneEmptyLastPage)
    }

    func testUserTargetsAreEveryValidDeviceOfEachUser() async throws {
        try await runContract(.postgresql, TargetStreamContract.testUserTargetsAreEveryValidDeviceOfEachUser)
    }
}

final class WebhookQueueContractOnPostgreSQL: XCTestCase {
    func testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending() async throws {
        try await runContract(.postgresql, WebhookQueueContract.testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending)
    }

    func testDueWebhookIsClaimedThenHiddenUntilItsLeaseEnds() async throws {
        try await runContract(.postgresql, WebhookQueueContract.testDueWebhookIsClaimedThenHiddenUntilItsLeaseEnds)
    }

    func testRetryDeliveredAndGaveUpOutcomes() async throws {
        try await runContract(.postgresql, WebhookQueueContract.testRetryDeliveredAndGaveUpOutcomes)
    }

    func testADeferredWebhookIsDueAgainLaterWithoutSpendingAnAttempt() async throws {
        try await runContract(.postgresql, WebhookQueueContract.testADeferredWebhookIsDueAgainLaterWithoutSpendingAnAttempt)
    }
}

final class ShardedQueueContractOnPostgreSQL: XCTestCase {
    func testLargePublishReachesEachDeviceOnceWhetherSplitOrWhole() async throws {
        try await runContract(.postgresql, ShardedQueueContract.testLargePublishReachesEachDeviceOnceWhetherSplitOrWhole)
    }

    func testTakenOverShardResumesAtItsCheckpointWithTotalsNotSums() async throws {
        try await runContract(.postgresql, ShardedQueueContract.testTakenOverShardResumesAtItsCheckpointWithTotalsNotSums)
    }
}

final class InvalidationLogContractOnPostgreSQL: XCTestCase {
    func testDeletingADeviceOrAUserLogsEachDeviceAsRemoved() async throws {
        try await runContract(.postgresql, InvalidationLogContract.testDeletingADeviceOrAUserLogsEachDeviceAsRemoved)
    }

    func testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp() async throws {
        try await runContract(.postgresql, InvalidationLogContract.testInvalidationIsLoggedOnceWithMaskedTokenAndProviderTimestamp)
    }

    func testResultThatDoesNotInvalidateIsNotLogged() async throws {
        try await runContract(.postgresql, InvalidationLogContract.testResultThatDoesNotInvalidateIsNotLogged)
    }

    func testNotifierSeesEachInvalidationUntilMarked() async throws {
        try await runContract(.postgresql, InvalidationLogContract.testNotifierSeesEachInvalidationUntilMarked)
    }

    func testPurgeDropsOldRowsAndRowsOverTheInstanceCap() async throws {
        try await runContract(.postgresql, InvalidationLogContract.testPurgeDropsOldRowsAndRowsOverTheInstanceCap)
    }
}

final class BeamsForwardContractOnPostgreSQL: XCTestCase {
    func testAPublishForwardCommitsWithItsJobAndIsClaimedOnceUntilItsLeaseEnds() async throws {
        try await runContract(.postgresql, BeamsForwardContract.testAPublishForwardCommitsWithItsJobAndIsClaimedOnceUntilItsLeaseEnds)
    }

    func testADuplicatePublishQueuesNoSecondForwardAndAPublishWithoutOneQueuesNone() async throws {
        try await runContract(.postgresql, BeamsForwardContract.testADuplicatePublishQueuesNoSecondForwardAndAPublishWithoutOneQueuesNone)
    }

    func testARetirementIsQueuedOncePerBeamsDeviceAndOutcomesMoveOrEndIt() async throws {
        try await runContract(.postgresql, BeamsForwardContract.testARetirementIsQueuedOncePerBeamsDeviceAndOutcomesMoveOrEndIt)
    }
}

final class QuotaContractOnPostgreSQL: XCTestCase {
    func testTheDailyQuotaRefusesThePublishPastItStoringNothingAndResetsAtMidnightUTC() async throws {
        try await runContract(.postgresql, QuotaContract.testTheDailyQuotaRefusesThePublishPastItStoringNothingAndResetsAtMidnightUTC)
    }

    func testQuotaUsageCountsTheInstancesDevices() async throws {
        try await runContract(.postgresql, QuotaContract.testQuotaUsageCountsTheInstancesDevices)
    }
}

final class APIKeysContractOnPostgreSQL: XCTestCase {
    func testKeysAreStoredPerInstanceAndSurviveReopening() async throws {
        try await runContract(.postgresql, APIKeysContract.testKeysAreStoredPerInstanceAndSurviveReopening)
    }

    func testRollRetiresTheOldKeyAndStoresTheReplacementTogether() async throws {
        try await runContract(.postgresql, APIKeysContract.testRollRetiresTheOldKeyAndStoresTheReplacementTogether)
    }

    func testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward() async throws {
        try await runContract(.postgresql, APIKeysContract.testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward)
    }
}

final class AuditLogContractOnPostgreSQL: XCTestCase {
    func testAnEntryIsWrittenWithTheChangeAndAFailedChangeWritesNone() async throws {
        try await runContract(.postgresql, AuditLogContract.testAnEntryIsWrittenWithTheChangeAndAFailedChangeWritesNone)
    }

    func testRetentionPruneRemovesOnlyEntriesOlderThanTheCutoffUpToTheLimit() async throws {
        try await runContract(.postgresql, AuditLogContract.testRetentionPruneRemovesOnlyEntriesOlderThanTheCutoffUpToTheLimit)
    }

    func testAUserDeletionAndACancelWriteTheirEntryAndACancelOfNothingWritesNone() async throws {
        try await runContract(.postgresql, AuditLogContract.testAUserDeletionAndACancelWriteTheirEntryAndACancelOfNothingWritesNone)
    }

    func testTheServerWideLogListsEveryInstanceInOrderAndFiltersByAction() async throws {
        try await runContract(.postgresql, AuditLogContract.testTheServerWideLogListsEveryInstanceInOrderAndFiltersByAction)
    }

    func testAnImportBatchWritesItsEntryInItsTransactionAndADryRunWritesNone() async throws {
        try await runContract(.postgresql, AuditLogContract.testAnImportBatchWritesItsEntryInItsTransactionAndADryRunWritesNone)
    }
}

final class StoredInstancesContractOnPostgreSQL: XCTestCase {
    func testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing() async throws {
        try await runContract(.postgresql, StoredInstancesContract.testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing)
    }

    func testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain() async throws {
        try await runContract(.postgresql, StoredInstancesContract.testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain)
    }
}
