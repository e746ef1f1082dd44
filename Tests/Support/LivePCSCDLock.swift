import Foundation
import Testing

/// Keeps the live PC/SC suites of one test process from disturbing each other while Swift Testing runs suites in
/// parallel: a `flock` on ``path``, shared by tests that use readers of their own and exclusive for tests that
/// use every reader or stop pcscd. Every live suite takes it: locks on separately opened descriptors exclude each
/// other also within one process.
///
/// Applied to a suite, it takes the lock around each test, not the whole suite; a test's own exclusive lock
/// replaces its suite's shared one.
public struct LivePCSCDLock: SuiteTrait, TestTrait, TestScoping {
    public enum Mode: Sendable {
        case shared
        case exclusive
    }

    public static let path = "/tmp/proxima-live-pcscd.lock"

    public var mode: Mode

    public init(mode: Mode) { self.mode = mode }

    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        guard !test.isSuite, testCase != nil else { return nil }
        if mode == .shared, test.traits.contains(where: { ($0 as? Self)?.mode == .exclusive }) { return nil }
        return self
    }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let descriptor = open(Self.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else {
            Issue.record("cannot open \(Self.path): errno \(errno)")
            return
        }
        defer { close(descriptor) }  // closing the descriptor releases the lock
        let operation = mode == .shared ? LOCK_SH : LOCK_EX
        // flock blocks: wait on a thread of its own, never on the cooperative pool, nor on Dispatch's global
        // queue, whose few threads other waiting tests would then starve.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                while flock(descriptor, operation) != 0 && errno == EINTR {}
                continuation.resume()
            }.start()
        }
        try await function()
    }
}

extension Trait where Self == LivePCSCDLock {
    /// Holds the live pcscd lock (``LivePCSCDLock``) around each test.
    public static func livePCSCD(_ mode: LivePCSCDLock.Mode) -> Self { LivePCSCDLock(mode: mode) }
}
