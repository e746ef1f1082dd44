internal import Glibc
internal import ProximaCore

/// The system calls the PN532 emulator makes, in one place (so they can move onto a shared system-call layer): a
/// pseudo-terminal pair in raw mode, a wake-up pipe, `poll`, non-blocking reads and writes, and a symbolic link that
/// gives the terminal a stable name.
///
/// The emulator keeps the terminal's subsidiary side open too, so the controlling side never reads `EIO` when the
/// host closes its end (libnfc's `nfc_close`), and the `/dev/pts/N` name stays valid between host connections.
final class PseudoTerminal: Sendable {
    /// The controlling side: what the emulator reads and writes.
    let controller: Int32
    /// The subsidiary side, held open by the emulator itself.
    let subsidiary: Int32
    /// `/dev/pts/N`: what a host opens.
    let path: String

    /// Opens a pair and puts it in raw mode (no echo, no line editing, no output processing), as a UART is.
    ///
    /// What `posix_openpt`, `unlockpt` and `ptsname` do on Linux, spelt out (Swift's Glibc module does not export
    /// them): open `/dev/ptmx`, clear the lock with `TIOCSPTLCK`, read the number with `TIOCGPTN` (`grantpt` has
    /// nothing to do with devpts).
    init() throws {
        let controller = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard controller >= 0 else { throw Self.failure("open /dev/ptmx") }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard ioctl(controller, Self.setLock, &unlock) == 0, ioctl(controller, Self.getNumber, &number) == 0 else {
            let error = Self.failure("ioctl TIOCSPTLCK/TIOCGPTN")
            close(controller)
            throw error
        }
        let path = "/dev/pts/\(number)"
        let subsidiary = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard subsidiary >= 0 else {
            let error = Self.failure("open \(path)")
            close(controller)
            throw error
        }
        var settings = termios()
        if tcgetattr(subsidiary, &settings) == 0 {
            cfmakeraw(&settings)
            _ = tcsetattr(subsidiary, TCSANOW, &settings)
        }
        self.controller = controller
        self.subsidiary = subsidiary
        self.path = path
    }

    deinit {
        close(controller)
        close(subsidiary)
    }

    /// `TIOCSPTLCK` (`_IOW('T', 0x31, int)`) and `TIOCGPTN` (`_IOR('T', 0x30, unsigned int)`), from
    /// `<asm-generic/ioctls.h>`: function-like macros Swift does not import.
    private static let setLock = UInt(0x4004_5431)
    private static let getNumber = UInt(0x8004_5430)

    static func failure(_ call: String, _ code: Int32 = errno) -> ProximaError {
        ProximaError(.pluginFailed, "\(call) failed: \(String(cString: strerror(code)))")
    }
}

/// A pipe whose only job is to wake a thread blocked in `poll`.
final class WakeUpPipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw PseudoTerminal.failure("pipe") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }
}

/// Non-blocking I/O on the emulator's descriptors.
enum TerminalIO {
    /// What a wait for input found.
    enum Readiness {
        case readable
        case woken
        case failed(Int32)
    }

    /// Blocks until `fd` has input or `wakeUp` is written to.
    static func waitForInput(_ fd: Int32, wakeUp: Int32) -> Readiness {
        var descriptors = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeUp, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let result = poll(&descriptors, 2, -1)
            if result < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            if descriptors[1].revents != 0 { return .woken }
            if descriptors[0].revents & Int16(POLLIN) != 0 { return .readable }
            if descriptors[0].revents != 0 { return .failed(EIO) }
        }
    }

    /// Reads what is there (at most `buffer.count` bytes); `nil` on end of file or an error other than `EAGAIN`.
    static func readAvailable(_ fd: Int32, into buffer: inout [UInt8]) -> Int? {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 { return count }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return 0 }
            return nil
        }
    }

    /// Writes all of `bytes`, waiting for room when the terminal's buffer is full; `false` when it cannot.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                raw.baseAddress.map { write(fd, $0 + sent, raw.count - sent) } ?? 0
            }
            if count > 0 {
                sent += count
                continue
            }
            if count < 0 && errno == EINTR { continue }
            guard count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) else { return false }
            var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            // A host that stopped reading for a second is gone; give up on the frame rather than block forever.
            guard poll(&descriptor, 1, 1000) > 0 else { return false }
        }
        return true
    }

    /// Points the symbolic link at `linkPath` to `target`, replacing what is there (through a temporary name and
    /// `rename`, so a host never finds the path missing while it is being replaced).
    static func link(_ linkPath: String, to target: String) throws {
        let temporary = linkPath + ".new"
        _ = unlink(temporary)
        guard symlink(target, temporary) == 0 else { throw PseudoTerminal.failure("symlink \(linkPath)") }
        guard rename(temporary, linkPath) == 0 else {
            let error = PseudoTerminal.failure("rename \(linkPath)")
            _ = unlink(temporary)
            throw error
        }
    }

    static func unlinkPath(_ path: String) {
        _ = unlink(path)
    }
}
