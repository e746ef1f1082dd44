/// The byte stream a ``DriverConnection`` speaks the driver protocol over: a child process's pipes
/// (``ProcessDriverLink``) or a remote agent's TLS connection (the Remote transport's link). One session code, the
/// framing, calls, deadlines and faults, serves both.
///
/// Every method is called by the connection's own thread, except ``write(_:)``, which callers use under the
/// connection's writer lock: it must not block (a full pipe or socket buffer is ``WriteOutcome/wouldBlock``).
package protocol DriverLink: AnyObject, Sendable {
    /// Polled for the peer's frames.
    var inputDescriptor: Int32 { get }
    /// Polled for room when frames wait to be written; may be ``inputDescriptor``.
    var outputDescriptor: Int32 { get }
    /// Polled for log lines (a child's standard error), or `nil`.
    var logDescriptor: Int32? { get }
    /// Whether input was read ahead into a buffer of the link's own (decrypted TLS records), so it is ready without
    /// the descriptor being readable.
    var hasBufferedInput: Bool { get }
    /// The child's pid (also its process group), `nil` for a network peer.
    var processID: Int32? { get }
    /// Inode numbers of the link's descriptors, so tests can check none is still open.
    var inodes: [UInt64] { get }
    /// What the peer is, for messages: `the driver`, `agent "lane-pc-1"`.
    var peerName: String { get }
    /// Whether callers may ``write(_:)`` from their own task (a pipe write is one non-blocking system call); when
    /// `false` (TLS, whose `SSL` object belongs to one thread) every frame is queued for the connection's thread.
    var writesFromCallers: Bool { get }

    func read(into buffer: inout [UInt8]) -> ReadOutcome
    func write(_ bytes: ArraySlice<UInt8>) -> WriteOutcome
    /// Reads the log descriptor (only called when there is one).
    func readLog(into buffer: inout [UInt8]) -> ReadOutcome
    /// Ends the peer's side: kills the process group, or shuts the socket down. Called once, when stopping.
    func terminate()
    /// No more reads of the input: closes a child's standard output. Called once.
    func closeInput()
    /// Closes the log descriptor. Called once, when there is one.
    func closeLog()
    /// Closes what writes use, under the writer lock, after which ``write(_:)`` is never called again.
    func closeOutput()
    /// Waits for the peer to end (reaps a child) and says how it did.
    func reap() -> DriverExitStatus?
}

/// A driver child process: frames on its standard input and output, log lines on its standard error.
final class ProcessDriverLink: DriverLink {
    private let process: SpawnedProcess

    init(_ process: SpawnedProcess) { self.process = process }

    var inputDescriptor: Int32 { process.standardOutput }
    var outputDescriptor: Int32 { process.standardInput }
    var logDescriptor: Int32? { process.standardError }
    var hasBufferedInput: Bool { false }
    var processID: Int32? { process.pid }
    var inodes: [UInt64] { process.pipeInodes }
    var peerName: String { "the driver" }
    var writesFromCallers: Bool { true }

    func read(into buffer: inout [UInt8]) -> ReadOutcome {
        DriverSystemCalls.read(process.standardOutput, into: &buffer)
    }
    func write(_ bytes: ArraySlice<UInt8>) -> WriteOutcome { DriverSystemCalls.write(process.standardInput, bytes) }
    func readLog(into buffer: inout [UInt8]) -> ReadOutcome {
        DriverSystemCalls.read(process.standardError, into: &buffer)
    }
    func terminate() { DriverSystemCalls.killGroup(process.pid) }
    func closeInput() { DriverSystemCalls.close(process.standardOutput) }
    func closeLog() { DriverSystemCalls.close(process.standardError) }
    func closeOutput() { DriverSystemCalls.close(process.standardInput) }
    func reap() -> DriverExitStatus? { DriverSystemCalls.waitForExit(process.pid) }
}
