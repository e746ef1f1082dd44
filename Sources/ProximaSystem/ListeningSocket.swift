#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// TCP server sockets on ``FileDescriptor``: listen on an IPv4 or IPv6 address, accept without blocking, and switch a
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

    /// A close-on-exec, non-blocking TCP socket listening on `host:port` (an IPv4 dotted quad, or an IPv6 address
    /// such as `::1` or `::` without brackets; port 0 picks a free one, see ``localPort``), with `SO_REUSEADDR` so a
    /// restarted store can bind at once. An IPv6 socket takes IPv6 only (`IPV6_V6ONLY`).
    public static func listenTCP(host: String, port: Int, backlog: Int32 = 64) throws(ListenFailure)
        -> FileDescriptor
    {
        var storage = sockaddr_storage()
        let family: Int32
        let length: socklen_t
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(clamping: port)).bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                throw ListenFailure(host: host, port: port, reason: "not an IPv6 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
            (family, length) = (AF_INET6, socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                throw ListenFailure(host: host, port: port, reason: "not an IPv4 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
            (family, length) = (AF_INET, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        #if os(Linux)
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        #else
        let type = SOCK_STREAM
        #endif
        let raw = socket(family, type, 0)
        guard raw >= 0 else {
            let error = Errno.current
            throw ListenFailure(host: host, port: port, reason: "socket(): \(error)", errno: error)
        }
        var one: Int32 = 1
        _ = setsockopt(raw, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            _ = setsockopt(raw, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(raw, $0, length) }
        }
        guard bound == 0, listen(raw, backlog) == 0 else {
            let error = Errno.current
            _ = systemClose(raw)
            throw ListenFailure(host: host, port: port, reason: "\(error)", errno: error)
        }
        return FileDescriptor(rawValue: raw)
    }

    /// The local port a socket is bound to (0 when it is not a bound IPv4 or IPv6 socket).
    public var localPort: Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let found = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(rawValue, $0, &length) }
        }
        guard found == 0 else { return 0 }
        return Self.address(of: storage)?.port ?? 0
    }

    /// A connection waiting on this listening socket, close-on-exec and non-blocking, with its peer's address
    /// (`127.0.0.1:40222`, `[::1]:40222`); `nil` when none waits.
    /// - Throws: `Errno` for anything but "none waiting" or an interrupted call.
    public func acceptConnection() throws(Errno) -> (descriptor: FileDescriptor, peer: String)? {
        var storage = sockaddr_storage()
        while true {
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let raw = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(rawValue, $0, &length)
                }
            }
            if raw >= 0 {
                // accept4 is not visible through Swift's Glibc module; children are spawned with closefrom(3), so the
                // window before FD_CLOEXEC leaks nothing into them.
                _ = fcntl(raw, F_SETFD, FD_CLOEXEC)
                _ = fcntl(raw, F_SETFL, fcntl(raw, F_GETFL) | O_NONBLOCK)
                let peer = Self.address(of: storage).map {
                    $0.host.contains(":") ? "[\($0.host)]:\($0.port)" : "\($0.host):\($0.port)"
                }
                return (FileDescriptor(rawValue: raw), peer ?? "?")
            }
            let error = Errno.current
            if error == .interrupted { continue }
            if error == .wouldBlock || error == .connectionAborted { return nil }
            throw error
        }
    }

    /// The numeric host and port of an IPv4 or IPv6 socket address.
    private static func address(of storage: sockaddr_storage) -> (host: String, port: Int)? {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let port: UInt16
        switch Int32(storage.ss_family) {
        case AF_INET:
            var address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            _ = inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
            port = UInt16(bigEndian: address.sin_port)
        case AF_INET6:
            var address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            _ = inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
            port = UInt16(bigEndian: address.sin6_port)
        default:
            return nil
        }
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (host, Int(port))
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
