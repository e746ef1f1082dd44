internal import CProcessSpawn
internal import Glibc

// Every system call of the External transport lives in this file (pipes, posix_spawn, poll, read/write, kill,
// waitpid, stat), so it can move onto a shared system-call layer later.

/// A failed system call: which one and its `errno`.
package struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    package var call: String
    package var errno: Int32

    package init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    package var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// How a driver process ended, as `waitpid` reports it.
public enum DriverExitStatus: Hashable, Sendable, CustomStringConvertible {
    case exited(code: Int32)
    case signalled(signal: Int32)

    public var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signalled(let signal): "killed by signal \(signal)"
        }
    }
}

/// What one non-blocking `write` did.
package enum WriteOutcome {
    case wrote(Int)
    /// The pipe is full: the driver is not reading its standard input.
    case wouldBlock
    /// The driver closed its end.
    case closed
    case failed(SystemCallError)
}

/// What one `read` did.
package enum ReadOutcome {
    case bytes(Int)
    case endOfFile
    /// Nothing to read now (a TLS record not yet complete).
    case wouldBlock
    case failed(SystemCallError)
}

/// A running child: its pid (also its process group) and the kernel's ends of its three pipes.
struct SpawnedProcess: Sendable {
    var pid: Int32
    /// Write end of the child's standard input (non-blocking).
    var standardInput: Int32
    /// Read end of the child's standard output.
    var standardOutput: Int32
    /// Read end of the child's standard error.
    var standardError: Int32
    /// The inode numbers of the three pipes, so tests can check that no descriptor of them outlives the driver.
    var pipeInodes: [UInt64]
}

enum DriverSystemCalls {
    /// The default size of a pipe's buffer on Linux is 64 KiB; one frame may be larger, so the kernel asks for 1 MiB
    /// on the driver's standard input (`F_SETPIPE_SZ`, from `<fcntl.h>`: not visible through Swift's Glibc).
    static let setPipeSize: Int32 = 1031
    static let standardInputPipeSize: Int32 = 1 << 20

    /// Writing to the pipe of a driver that died raises `SIGPIPE`, which would end the whole kernel: it is ignored in
    /// this process (the write then fails with `EPIPE`), and set back to its default in each driver.
    static let ignoreBrokenPipe: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// A pipe whose ends are both close-on-exec.
    static func pipe() throws(SystemCallError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe2(&fds, O_CLOEXEC) == 0 else { throw SystemCallError(call: "pipe2", errno: errno) }
        return (fds[0], fds[1])
    }

    /// A pipe used to wake a thread blocked in `poll`: both ends close-on-exec and non-blocking.
    static func wakePipe() throws(SystemCallError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe2(&fds, O_CLOEXEC | O_NONBLOCK) == 0 else { throw SystemCallError(call: "pipe2", errno: errno) }
        return (fds[0], fds[1])
    }

    /// Starts `executable` with its standard input, output and error on fresh pipes, in a process group of its own,
    /// with no other descriptor inherited (`closefrom(3)` in the child), default signal dispositions and an empty
    /// signal mask.
    ///
    /// - Parameters:
    ///   - executable: an absolute path.
    ///   - arguments: `argv[1...]`.
    ///   - environment: `KEY=VALUE` strings, the child's whole environment.
    ///   - workingDirectory: the child's current directory.
    static func spawn(
        executable: String,
        arguments: [String],
        environment: [String],
        workingDirectory: String
    ) throws(SystemCallError) -> SpawnedProcess {
        _ = ignoreBrokenPipe
        let input = try pipe()
        var opened = [input.read, input.write]
        func closeOpened() { for fd in opened { _ = Glibc.close(fd) } }
        let output: (read: Int32, write: Int32)
        let errors: (read: Int32, write: Int32)
        do {
            output = try pipe()
            opened += [output.read, output.write]
            errors = try pipe()
            opened += [errors.read, errors.write]
        } catch {
            closeOpened()
            throw error
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input.read, 0)
        posix_spawn_file_actions_adddup2(&actions, output.write, 1)
        posix_spawn_file_actions_adddup2(&actions, errors.write, 2)
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        posix_spawn_file_actions_addchdir_np(&actions, workingDirectory)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes,
            Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        )

        var pid: pid_t = 0
        let argv = [executable] + arguments
        let status = withCStrings(argv) { argv in
            withCStrings(environment) { envp in
                posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            }
        }
        // The child's ends belong to the child now (or to nobody, if spawning failed).
        for fd in [input.read, output.write, errors.write] { _ = Glibc.close(fd) }
        guard status == 0 else {
            for fd in [input.write, output.read, errors.read] { _ = Glibc.close(fd) }
            throw SystemCallError(call: "posix_spawn \(executable)", errno: status)
        }
        _ = fcntl(input.write, F_SETFL, fcntl(input.write, F_GETFL) | O_NONBLOCK)
        _ = fcntl(input.write, setPipeSize, standardInputPipeSize)
        let inodes = [input.write, output.read, errors.read].map { inode(of: $0) }
        return SpawnedProcess(
            pid: pid,
            standardInput: input.write,
            standardOutput: output.read,
            standardError: errors.read,
            pipeInodes: inodes
        )
    }

    private static func withCStrings<R>(
        _ strings: [String],
        _ body: ([UnsafeMutablePointer<CChar>?]) -> R
    ) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }

    static func inode(of fd: Int32) -> UInt64 {
        var status = stat()
        guard fstat(fd, &status) == 0 else { return 0 }
        return UInt64(status.st_ino)
    }

    /// One non-blocking write, retried on `EINTR`.
    static func write(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> WriteOutcome {
        while true {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written >= 0 { return .wrote(written) }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case EPIPE: return .closed
            case let code: return .failed(SystemCallError(call: "write", errno: code))
            }
        }
    }

    /// One read into `buffer`, retried on `EINTR`.
    static func read(_ fd: Int32, into buffer: inout [UInt8]) -> ReadOutcome {
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 { return .bytes(count) }
            if count == 0 { return .endOfFile }
            if errno == EINTR { continue }
            return .failed(SystemCallError(call: "read", errno: errno))
        }
    }

    /// Empties a non-blocking wake pipe.
    static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ Glibc.read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Wakes whoever polls the read end of a wake pipe (a full pipe is already a pending wake-up).
    static func wake(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = Glibc.write(fd, &byte, 1)
    }

    /// Waits with `poll(2)` until one of `fds` is ready (for reading, or for writing where `write` is set) or
    /// `timeout` milliseconds pass (-1: no timeout); returns the ready descriptors (also those that hung up or
    /// failed). `EINTR` counts as nothing ready.
    static func poll(_ fds: [(fd: Int32, write: Bool)], timeout: Int32) -> Set<Int32> {
        var entries = fds.map { pollfd(fd: $0.fd, events: Int16($0.write ? POLLOUT : POLLIN), revents: 0) }
        let count = nfds_t(entries.count)
        guard entries.withUnsafeMutableBufferPointer({ Glibc.poll($0.baseAddress, count, timeout) }) > 0 else {
            return []
        }
        return Set(entries.filter { $0.revents != 0 }.map(\.fd))
    }

    /// `poll(2)` over `(fd, wantsRead, wantsWrite)` entries; returns what each descriptor is ready for (a hang-up
    /// or error counts as both, so the next read or write reports it). `EINTR` counts as nothing ready.
    static func poll(
        _ entries: [(fd: Int32, read: Bool, write: Bool)],
        timeout: Int32
    ) -> [Int32: (read: Bool, write: Bool)] {
        var fds = entries.map { entry in
            pollfd(fd: entry.fd, events: Int16((entry.read ? POLLIN : 0) | (entry.write ? POLLOUT : 0)), revents: 0)
        }
        let count = nfds_t(fds.count)
        guard fds.withUnsafeMutableBufferPointer({ Glibc.poll($0.baseAddress, count, timeout) }) > 0 else { return [:] }
        var ready: [Int32: (read: Bool, write: Bool)] = [:]
        let failed = Int16(POLLHUP | POLLERR | POLLNVAL)
        for entry in fds where entry.revents != 0 {
            let broken = entry.revents & failed != 0
            ready[entry.fd] = (
                entry.revents & Int16(POLLIN) != 0 || broken, entry.revents & Int16(POLLOUT) != 0 || broken
            )
        }
        return ready
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// Sends `SIGKILL` to the driver's whole process group (its own children too).
    static func killGroup(_ pid: Int32) {
        _ = kill(-pid, SIGKILL)
        _ = kill(pid, SIGKILL)
    }

    /// Reaps the child, blocking until it has ended.
    static func waitForExit(_ pid: Int32) -> DriverExitStatus? {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return nil }
        }
        let signal = status & 0x7F
        return signal == 0 ? .exited(code: (status >> 8) & 0xFF) : .signalled(signal: signal)
    }

    // MARK: Files

    /// The mode bits of the file at `path` (symbolic links followed), or the `errno` of `stat`.
    static func mode(of path: String) -> Result<UInt32, SystemCallError> {
        var status = stat()
        guard stat(path, &status) == 0 else { return .failure(SystemCallError(call: "stat \(path)", errno: errno)) }
        return .success(UInt32(status.st_mode))
    }

    /// `path` unchanged when absolute, else joined to `base`.
    static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") || base.isEmpty { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }

    static func isExecutableFile(_ path: String) -> Bool {
        guard case .success(let mode) = mode(of: path) else { return false }
        return mode & UInt32(S_IFMT) == UInt32(S_IFREG) && access(path, X_OK) == 0
    }

    /// The whole file at `path`, at most `limit` bytes.
    static func readFile(_ path: String, limit: Int) throws(SystemCallError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError(call: "open \(path)", errno: errno) }
        defer { _ = Glibc.close(fd) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while contents.count <= limit {
            switch read(fd, into: &buffer) {
            case .bytes(let count): contents += buffer[..<count]
            case .endOfFile: return contents
            case .wouldBlock: continue  // a regular file never blocks
            case .failed(let error): throw error
            }
        }
        throw SystemCallError(call: "read \(path)", errno: EFBIG)
    }

    /// The kernel process's environment, as `KEY=VALUE` strings.
    static func environment() -> [String] {
        var result: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            result.append(String(cString: entry))
            pointer += 1
        }
        return result
    }
}
