import Testing

@testable import ProximaKernel

/// The reader pool's waiter: an answer or a cancellation that comes before the waiting task stored its continuation
/// must reach it (a dropped early answer left a lease request waiting forever under load).
@Suite struct WaiterContinuationTests {
    @Test("an answer given before the continuation is stored is delivered when it is stored, and counted")
    func answerBeforeStore() async throws {
        let waiter = WaiterContinuation<Int>()
        let before = WaiterContinuation<Int>.answersBeforeStore
        #expect(waiter.answer { .success(7) })
        #expect(WaiterContinuation<Int>.answersBeforeStore >= before + 1)
        #expect(!waiter.answer { .success(8) }, "a second answer is not taken")
        waiter.cancel()  // too late: the answer stands
        let value = try await withCheckedThrowingContinuation { waiter.store($0) }
        #expect(value == 7)
    }

    @Test("an answer after the continuation is stored resumes it; the answer's closure runs only when taken")
    func answerAfterStore() async throws {
        let waiter = WaiterContinuation<Int>()
        let task = Task { try await withCheckedThrowingContinuation { waiter.store($0) } }
        // Until the task has stored its continuation an answer is kept; either way the task gets it.
        #expect(waiter.answer { .success(42) })
        var ranLate = false
        let takenLate = waiter.answer {
            ranLate = true
            return .success(0)
        }
        #expect(!takenLate)
        #expect(!ranLate)
        #expect(try await task.value == 42)
    }

    @Test("a cancellation before the store makes the store throw CancellationError, and no answer is taken after")
    func cancelBeforeStore() async {
        let waiter = WaiterContinuation<Int>()
        waiter.cancel()
        var granted = false
        let taken = waiter.answer {
            granted = true
            return .success(1)
        }
        #expect(!taken)
        #expect(!granted, "no grant is made for a cancelled request")
        await #expect(throws: CancellationError.self) {
            try await withCheckedThrowingContinuation { waiter.store($0) }
        }
    }

    @Test("a failure answer is thrown by the waiting task")
    func failureAnswer() async {
        struct Expired: Error {}
        let waiter = WaiterContinuation<Int>()
        #expect(waiter.answer { .failure(Expired()) })
        await #expect(throws: Expired.self) {
            try await withCheckedThrowingContinuation { waiter.store($0) }
        }
    }
}
