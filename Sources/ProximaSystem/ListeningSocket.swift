#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// TCP server sockets on ``FileDescriptor``: listen on an IPv4 address, accept without blocking, and switch a
/// descriptor to non-blocking mode (TLS over a socket polled by one thread).
extension FileDescriptor {
    /// A failed `socket`, `bind` or `listen`: the address, the call and its errno.
    public struct ListenFailure: Error, Hashable, Sendable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var reason: String
        public var errno: Errno?
        public var description: String { "cannot listen on \(host):\(port): \(reason)" }
    }

    /// A close-on-exec, non-blocking TCP socket listening on `host:port` (IPv4 dotted quad; port 0 picks a free
    /// one, see ``localPort``), with `SO_REUSEADDR` so a restarted store can bind at once.
    public static func listenTCP(host: String, port: Int, backlog: Int32 = 64) throws(ListenFailure)
        -> FileDescriptor
    {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw ListenFailure(host: host, port: port, reason: "not an IPv4 address")
        }
        #if os(Linux)
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        #else
        let type = SOCK_STREAM
        #endif
        let raw = socket(AF_INET, type, 0)
        guard raw >= 0 else {
            let error = Errno.current
            throw ListenFailure(host: host, port: port, reason: "socket(): \(error)", errno: error)
        }
        var one: Int32 = 1
        _ = setsockopt(raw, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(raw, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(raw, backlog) == 0 else {
            let error = Errno.current
            _ = systemClose(raw)
            throw ListenFailure(host: host, port: port, reason: "\(error)", errno: error)
        }
        return FileDescriptor(rawValue: raw)
    }

    /// The local port a socket is bound to (0 when it is not a bound IPv4 socket).
    public var localPort: Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let found = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(rawValue, $0, &length) }
        }
        return found == 0 ? Int(UInt16(bigEndian: address.sin_port)) : 0
    }

    /// A connection waiting on this listening socket, close-on-exec and non-blocking, with its peer's address
    /// (`127.0.0.1:40222`); `nil` when none waits.
    /// - Throws: `Errno` for anything but "none waiting" or an interrupted call.
    public func acceptConnection() throws(Errno) -> (descriptor: FileDescriptor, peer: String)? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        while true {
            let raw = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(rawValue, $0, &length)
                }
            }
            if raw >= 0 {
                // accept4 is not visible through Swift's Glibc module; children are spawned with closefrom(3), so the
                // window before FD_CLOEXEC leaks nothing into them.
                _ = fcntl(raw, F_SETFD, FD_CLOEXEC)
                _ = fcntl(raw, F_SETFL, fcntl(raw, F_GETFL) | O_NONBLOCK)
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                _ = inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return (FileDescriptor(rawValue: raw), "\(host):\(UInt16(bigEndian: address.sin_port))")
            }
            let error = Errno.current
            if error == .interrupted { continue }
            if error == .wouldBlock || error == .connectionAborted { return nil }
            throw error
        }
    }

    /// Sets `O_NONBLOCK`.
    public func setNonBlocking() {
        _ = fcntl(rawValue, F_SETFL, fcntl(rawValue, F_GETFL) | O_NONBLOCK)
    }
}

private func systemClose(_ fd: Int32) -> Int32 { close(fd) }

extension FileDescriptor {
    /// A pipe whose ends are close-on-exec and non-blocking: a thread polls the read end to be woken (one byte
    /// written to the write end; a full pipe is already a pending wake-up).
    public static func wakePipe() throws(Errno) -> (read: FileDescriptor, write: FileDescriptor) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw Errno.current }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
    }
}
