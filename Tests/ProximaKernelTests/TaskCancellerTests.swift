import Testing

@testable import ProximaKernel

/// `TaskCanceller`: what the tap timer and `cancelRead()` cancel a task with.
@Suite struct TaskCancellerTests {
    @Test func cancelBeforeRunCancelsTheTaskAsItEnters() async throws {
        let canceller = TaskCanceller()
        canceller.cancel()
        let sawCancellation = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { try await canceller.run { Task.isCancelled } }
            return try await group.next() ?? false
        }
        #expect(sawCancellation)
        #expect(canceller.isCancelled)
    }

    @Test func cancelDuringRunEndsAWaitingTaskAndOnlyThatTask() async throws {
        let canceller = TaskCanceller()
        let entered = AsyncSignal()
        let ending = await withTaskGroup(of: Result<Bool, any Error>.self) { group in
            group.addTask {
                do {
                    return .success(
                        try await canceller.run {
                            entered.set()
                            try await Task.sleep(for: .seconds(600))
                            return true
                        }
                    )
                } catch {
                    return .failure(error)
                }
            }
            await entered.wait()
            canceller.cancel()
            return await group.next() ?? .success(true)
        }
        #expect(throws: CancellationError.self) { try ending.get() }
        #expect(!Task.isCancelled)
    }

    @Test func aTaskThatEndedIsNotTouchedByALaterCancel() async throws {
        let canceller = TaskCanceller()
        let value = try await canceller.run { 42 }
        canceller.cancel()
        #expect(value == 42)
        #expect(!Task.isCancelled)
    }
}
