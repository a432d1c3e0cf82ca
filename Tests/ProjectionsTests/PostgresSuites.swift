import XCTest

// Every store suite again, against PostgreSQL: a database of its own per test on the test
// process's shared server (`StoreTestCase`). Linux's test discovery finds only the test methods
// a class declares itself, so each inherited test is declared again here, calling the suite's;
// `PostgresSuiteCoverageTests` fails when one is missing.

final class PostgresMutationTests: MutationTests {
    override class var backend: StoreBackend { .postgres }

    override func testUpsertAppInsertsThenReplacesItsSettings() async throws {
        try await super.testUpsertAppInsertsThenReplacesItsSettings()
    }

    override func testUpsertApiTokenAddsTokensAndRevokesAnExistingOne() async throws {
        try await super.testUpsertApiTokenAddsTokensAndRevokesAnExistingOne()
    }

    override func testUpsertDeviceReplacesTheRowOfTheSameAppAndToken() async throws {
        try await super.testUpsertDeviceReplacesTheRowOfTheSameAppAndToken()
    }

    override func testTheSameTokenInAnotherAppIsAnotherDevice() async throws {
        try await super.testTheSameTokenInAnotherAppIsAnotherDevice()
    }

    override func testDeleteDeviceRemovesOnlyThatDevice() async throws {
        try await super.testDeleteDeviceRemovesOnlyThatDevice()
    }

    override func testPutRegistrationStatusStoresThenOverwritesTheOutcome() async throws {
        try await super.testPutRegistrationStatusStoresThenOverwritesTheOutcome()
    }

    override func testMutationsOfOneCommitApplyInTheirOrder() async throws {
        try await super.testMutationsOfOneCommitApplyInTheirOrder()
    }

    override func testAFailingMutationWritesNothingOfItsCommit() async throws {
        try await super.testAFailingMutationWritesNothingOfItsCommit()
    }

    override func testPutPendingInsertsAndLeavesAnExistingRowAsItIs() async throws {
        try await super.testPutPendingInsertsAndLeavesAnExistingRowAsItIs()
    }

    override func testDeletePendingRemovesOnlyThatNotificationOfThatDevice() async throws {
        try await super.testDeletePendingRemovesOnlyThatNotificationOfThatDevice()
    }

    override func testClearPendingRemovesEveryPendingRowOfThatDeviceOnly() async throws {
        try await super.testClearPendingRemovesEveryPendingRowOfThatDeviceOnly()
    }

    override func testDeleteDeviceLeavesItsPendingRowsToAnExplicitClear() async throws {
        try await super.testDeleteDeviceLeavesItsPendingRowsToAnExplicitClear()
    }

    override func testPutAckInsertsAndLeavesAnExistingAckAsItIs() async throws {
        try await super.testPutAckInsertsAndLeavesAnExistingAckAsItIs()
    }

    override func testAnAckRemovesItsPendingRowAndNoPendingRowFollowsAnAck() async throws {
        try await super.testAnAckRemovesItsPendingRowAndNoPendingRowFollowsAnAck()
    }

    override func testPutDeliveryInsertsAndLeavesAnExistingDeliveryAsItIs() async throws {
        try await super.testPutDeliveryInsertsAndLeavesAnExistingDeliveryAsItIs()
    }

    override func testPendingPutsDeletesAndClearsOfOneCommitEndAsInOrder() async throws {
        try await super.testPendingPutsDeletesAndClearsOfOneCommitEndAsInOrder()
    }

    override func testDevicesUpsertedAndDeletedInOneCommitEndAsTheirLastMutationSays() async throws {
        try await super.testDevicesUpsertedAndDeletedInOneCommitEndAsTheirLastMutationSays()
    }

    override func testTheFirstAckAndDeliveryOfAKeyInOneCommitStayAndTheLastUpsertWins() async throws {
        try await super.testTheFirstAckAndDeliveryOfAKeyInOneCommitStayAndTheLastUpsertWins()
    }

    override func testTokensOfTheLongestAcceptedLengthAreKeysLikeAnyOther() async throws {
        try await super.testTokensOfTheLongestAcceptedLengthAreKeysLikeAnyOther()
    }
}

final class PostgresOffsetTests: OffsetTests {
    override class var backend: StoreBackend { .postgres }

    override func testFirstCommitOfAPartitionStoresItsOffsetAndLaterCommitsMoveIt() async throws {
        try await super.testFirstCommitOfAPartitionStoresItsOffsetAndLaterCommitsMoveIt()
    }

    override func testExpectingNoOffsetWhereOneIsStoredConflicts() async throws {
        try await super.testExpectingNoOffsetWhereOneIsStoredConflicts()
    }

    override func testExpectingAnOffsetWhereNoneIsStoredConflicts() async throws {
        try await super.testExpectingAnOffsetWhereNoneIsStoredConflicts()
    }

    override func testAnOffsetConflictWritesNothingAndNamesOnlyTheMismatchedPartitions() async throws {
        try await super.testAnOffsetConflictWritesNothingAndNamesOnlyTheMismatchedPartitions()
    }

    override func testOffsetsAreReturnedOnlyForTheAskedTopics() async throws {
        try await super.testOffsetsAreReturnedOnlyForTheAskedTopics()
    }

    override func testOfTwoStoresOnOneFileOnlyOneMovesAPartitionFromTheSameOffset() async throws {
        try await super.testOfTwoStoresOnOneFileOnlyOneMovesAPartitionFromTheSameOffset()
    }
}

final class PostgresOutboxTests: OutboxTests {
    override class var backend: StoreBackend { .postgres }

    override func testOnlyTheLeaseHolderRecordsItsAttempt() async throws {
        try await super.testOnlyTheLeaseHolderRecordsItsAttempt()
    }

    override func testClaimsSkipExcludedAppsAndAReleasedJobIsClaimableAgain() async throws {
        try await super.testClaimsSkipExcludedAppsAndAReleasedJobIsClaimableAgain()
    }

    override func testEnqueueKeepsTheFirstJobWhenItsIdComesAgain() async throws {
        try await super.testEnqueueKeepsTheFirstJobWhenItsIdComesAgain()
    }

    override func testEnqueuedJobReadsBackAsWritten() async throws {
        try await super.testEnqueuedJobReadsBackAsWritten()
    }

    override func testAClaimedJobIsNotClaimedAgainUntilItsLeaseExpires() async throws {
        try await super.testAClaimedJobIsNotClaimedAgainUntilItsLeaseExpires()
    }

    override func testClaimTakesOnlyDueJobsOldestFirstUpToTheLimit() async throws {
        try await super.testClaimTakesOnlyDueJobsOldestFirstUpToTheLimit()
    }

    override func testAFailedAttemptWithRetriesLeftSchedulesTheNextOneAndReleasesTheLease() async throws {
        try await super.testAFailedAttemptWithRetriesLeftSchedulesTheNextOneAndReleasesTheLease()
    }

    override func testADeliveredJobIsNeverClaimedAgain() async throws {
        try await super.testADeliveredJobIsNeverClaimedAgain()
    }

    override func testEveryAttemptIsRecordedUntilTheJobFails() async throws {
        try await super.testEveryAttemptIsRecordedUntilTheJobFails()
    }

    override func testRecordingAnAttemptOfAnUnknownJobFails() async throws {
        try await super.testRecordingAnAttemptOfAnUnknownJobFails()
    }

    override func testNextOutboxDueIsTheEarliestPendingJob() async throws {
        try await super.testNextOutboxDueIsTheEarliestPendingJob()
    }

    override func testAReplayedJobIsNeverClaimedNorDue() async throws {
        try await super.testAReplayedJobIsNeverClaimedNorDue()
    }

    override func testRestoreOverwritesEveryColumnOfAnExistingJobAndInsertsAMissingOne() async throws {
        try await super.testRestoreOverwritesEveryColumnOfAnExistingJobAndInsertsAMissingOne()
    }

    override func testRestoreReleasesTheLeaseAndDropsAttemptHistoryAboveTheRestoredCount() async throws {
        try await super.testRestoreReleasesTheLeaseAndDropsAttemptHistoryAboveTheRestoredCount()
    }

    override func testRestoreAndEnqueueOfOneIdInOneCommitEndAsInOrder() async throws {
        try await super.testRestoreAndEnqueueOfOneIdInOneCommitEndAsInOrder()
    }

    override func testOutboxJobsPageThroughEveryJobInByteOrderOfTheirIds() async throws {
        try await super.testOutboxJobsPageThroughEveryJobInByteOrderOfTheirIds()
    }
}

final class PostgresLoadTests: LoadTests {
    override class var backend: StoreBackend { .postgres }

    override func testLoadReturnsAskedAppsWithAllTheirTokensRevokedToo() async throws {
        try await super.testLoadReturnsAskedAppsWithAllTheirTokensRevokedToo()
    }

    override func testLoadReturnsDevicesByTokenAndEveryDeviceOfEachAskedUser() async throws {
        try await super.testLoadReturnsDevicesByTokenAndEveryDeviceOfEachAskedUser()
    }

    override func testLoadAnswersThousandsOfKeysOfSeveralApps() async throws {
        try await super.testLoadAnswersThousandsOfKeysOfSeveralApps()
    }

    override func testLoadCountsThePendingRowsOfEveryLoadedDevice() async throws {
        try await super.testLoadCountsThePendingRowsOfEveryLoadedDevice()
    }

    override func testLoadReturnsTheAskedPendingRowsThatExist() async throws {
        try await super.testLoadReturnsTheAskedPendingRowsThatExist()
    }

    override func testLoadReturnsEveryAckOfTheAskedNotifications() async throws {
        try await super.testLoadReturnsEveryAckOfTheAskedNotifications()
    }

    override func testLoadCountsPendingRowsOfTwentyThousandDevicesOfTwoHundredUsers() async throws {
        try await super.testLoadCountsPendingRowsOfTwentyThousandDevicesOfTwoHundredUsers()
    }
}

final class PostgresReadTests: ReadTests {
    override class var backend: StoreBackend { .postgres }

    override func testRegistrationStatusesNeverReturnAnotherAppsRows() async throws {
        try await super.testRegistrationStatusesNeverReturnAnotherAppsRows()
    }

    override func testRegistrationStatusesLeaveOutUnknownIdsAndTolerateRepeats() async throws {
        try await super.testRegistrationStatusesLeaveOutUnknownIdsAndTolerateRepeats()
    }

    override func testAppsArePagedInIdOrder() async throws {
        try await super.testAppsArePagedInIdOrder()
    }

    override func testReadsOfMissingRowsAnswerNothing() async throws {
        try await super.testReadsOfMissingRowsAnswerNothing()
    }

    override func testDevicesOfAUserAreListedByToken() async throws {
        try await super.testDevicesOfAUserAreListedByToken()
    }

    override func testApiTokenIsFoundByHashInWhicheverAppRevokedToo() async throws {
        try await super.testApiTokenIsFoundByHashInWhicheverAppRevokedToo()
    }

    override func testPendingNotificationsAreListedOldestFirstThenByNotificationId() async throws {
        try await super.testPendingNotificationsAreListedOldestFirstThenByNotificationId()
    }

    override func testADeliveryIsOnlyFoundInItsOwnApp() async throws {
        try await super.testADeliveryIsOnlyFoundInItsOwnApp()
    }
}

final class PostgresDumpTests: DumpTests {
    override class var backend: StoreBackend { .postgres }

    override func testTwoStoresFedTheSameCommitsDumpTheSameText() async throws {
        try await super.testTwoStoresFedTheSameCommitsDumpTheSameText()
    }

    override func testDumpListsEachTableByPrimaryKeyOneEscapedLinePerRow() async throws {
        try await super.testDumpListsEachTableByPrimaryKeyOneEscapedLinePerRow()
    }

    override func testDumpEscapesLineBreaksSoEveryRowStaysOneLine() async throws {
        try await super.testDumpEscapesLineBreaksSoEveryRowStaysOneLine()
    }

    override func testDumpLeavesOutDeliveryProgressAndOffsets() async throws {
        try await super.testDumpLeavesOutDeliveryProgressAndOffsets()
    }

    override func testNonUTF8BodiesAreDumpedAsHex() async throws {
        try await super.testNonUTF8BodiesAreDumpedAsHex()
    }

    override func testDumpListsPendingNotificationsAcksAndDeliveriesByPrimaryKey() async throws {
        try await super.testDumpListsPendingNotificationsAcksAndDeliveriesByPrimaryKey()
    }

    override func testTheSameManagedStateWrittenInAnotherOrderDumpsTheSameText() async throws {
        try await super.testTheSameManagedStateWrittenInAnotherOrderDumpsTheSameText()
    }
}

final class PostgresLargeCommitTests: LargeCommitTests {
    override class var backend: StoreBackend { .postgres }

    override func testACommitOfTwentyThousandMutationsSucceeds() async throws {
        try await super.testACommitOfTwentyThousandMutationsSucceeds()
    }
}

final class PostgresTrackingStoreTests: TrackingStoreTests {
    override class var backend: StoreBackend { .postgres }

    override func testParkedReportsWhoseSendNeverCameExpireAndOthersStay() async throws {
        try await super.testParkedReportsWhoseSendNeverCameExpireAndOthersStay()
    }

    override func testCountingStoresEachDeviceActionOnceAndCountsRepeats() async throws {
        try await super.testCountingStoresEachDeviceActionOnceAndCountsRepeats()
    }

    override func testManyCountsOfOneDeliveryInOneMutation() async throws {
        try await super.testManyCountsOfOneDeliveryInOneMutation()
    }

    override func testStatsAreBoundedByTheDeliveryAndZeroWithTrackingOff() async throws {
        try await super.testStatsAreBoundedByTheDeliveryAndZeroWithTrackingOff()
    }

    override func testDiscardDeletesOtherAppsRowsAndRowsPastTheBoundOfThatDeliveryOnly() async throws {
        try await super.testDiscardDeletesOtherAppsRowsAndRowsPastTheBoundOfThatDeliveryOnly()
    }

    override func testLoadFindsDeliveriesByIdWhicheverAppSentThem() async throws {
        try await super.testLoadFindsDeliveriesByIdWhicheverAppSentThem()
    }

    override func testDumpListsTrackingRowsByKey() async throws {
        try await super.testDumpListsTrackingRowsByKey()
    }

    override func testACountAfterItsDeliveryDeletesTheRowsTheDeliveryCannotOwn() async throws {
        try await super.testACountAfterItsDeliveryDeletesTheRowsTheDeliveryCannotOwn()
    }

    override func testACountWithoutItsDeliveryStaysParkedUntilTheSend() async throws {
        try await super.testACountWithoutItsDeliveryStaysParkedUntilTheSend()
    }

    override func testADiscardAfterACountInOneCommitDeletesWhatTheCountWrote() async throws {
        try await super.testADiscardAfterACountInOneCommitDeletesWhatTheCountWrote()
    }

    override func testASendAndAReportCommittedAtOnceByTwoStoresLeaveNoRowTheDeliveryCannotOwn() async throws {
        try await super.testASendAndAReportCommittedAtOnceByTwoStoresLeaveNoRowTheDeliveryCannotOwn()
    }
}

final class PostgresDeadLetterStoreTests: DeadLetterStoreTests {
    override class var backend: StoreBackend { .postgres }

    override func testADeadLetterIsStoredWithItsOffsetAndMovesThePartitionOn() async throws {
        try await super.testADeadLetterIsStoredWithItsOffsetAndMovesThePartitionOn()
    }

    override func testDeadLettersListInPartitionAndOffsetOrderAndPage() async throws {
        try await super.testDeadLettersListInPartitionAndOffsetOrderAndPage()
    }

    override func testDeletingADeadLetterRemovesOnlyIt() async throws {
        try await super.testDeletingADeadLetterRemovesOnlyIt()
    }

    override func testAReasonIsKeptToItsLimit() async throws {
        try await super.testAReasonIsKeptToItsLimit()
    }

    override func testANewStoreRecordsWhenItWasCreatedOnceAndKeepsIt() async throws {
        try await super.testANewStoreRecordsWhenItWasCreatedOnceAndKeepsIt()
    }
}
