#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// TCP client sockets on ``FileDescriptor``: connect, send everything, receive, and the options a
/// request-response protocol on loopback needs (no Nagle delay, immediate ACKs).
extension FileDescriptor {
    /// A failed connect: the host could not be resolved, or the connection was refused.
    public struct ConnectFailure: Error, Hashable, Sendable, CustomStringConvertible {
        public var host: String
        public var port: Int
        /// The resolver's message, or the system error of `socket`/`connect`.
        public var reason: String
        public var errno: Errno?
        public var description: String { "cannot connect to \(host):\(port): \(reason)" }
    }

    /// A TCP connection to `host:port`, close-on-exec: a name or IPv4 address over IPv4, an IPv6 address (`::1`, no
    /// brackets) over IPv6.
    public static func connectTCP(host: String, port: Int) throws(ConnectFailure) -> FileDescriptor {
        var hints = addrinfo()
        hints.ai_family = host.contains(":") ? AF_INET6 : AF_INET
        #if os(Linux)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var found: UnsafeMutablePointer<addrinfo>? = nil
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let first = found else {
            throw ConnectFailure(host: host, port: port, reason: String(cString: gai_strerror(resolved)))
        }
        defer { freeaddrinfo(found) }
        #if os(Linux)
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let type = SOCK_STREAM
        #endif
        let raw = socket(first.pointee.ai_family, type, 0)
        guard raw >= 0 else {
            let error = Errno.current
            throw ConnectFailure(host: host, port: port, reason: "socket(): \(error)", errno: error)
        }
        let descriptor = FileDescriptor(rawValue: raw)
        // connect(2) interrupted by a signal goes on in the background; EINTR is only retried before that starts.
        if systemConnect(raw, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 {
            let error = Errno.current
            try? descriptor.close()
            throw ConnectFailure(host: host, port: port, reason: "\(error)", errno: error)
        }
        return descriptor
    }

    /// Sends every byte of `bytes`, never raising `SIGPIPE` (a closed peer is `EPIPE`).
    public func sendAll(_ bytes: [UInt8]) throws(Errno) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                Result { () throws(Errno) in
                    try retryingOnInterrupt {
                        send(rawValue, raw.baseAddress.map { $0 + sent }, bytes.count - sent, Int32(MSG_NOSIGNAL))
                    }
                }
            }
            let n = try count.get()
            if n == 0 { throw .brokenPipe }
            sent += n
        }
    }

    /// Receives at most `buffer.count` bytes; 0 when the peer closed the connection.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingOnInterrupt { recv(rawValue, buffer.baseAddress, buffer.count, 0) }
    }

    /// `TCP_NODELAY`: small request-response messages go out at once instead of waiting for Nagle's timer.
    public func setNoDelay() { setTCPOption(TCP_NODELAY) }

    /// `TCP_QUICKACK` (Linux): ACK at once. Linux turns it off again after a while, so a protocol that waits for
    /// an answer arms it again before each read.
    public func armQuickAck() {
        #if os(Linux)
        setTCPOption(Int32(TCP_QUICKACK))
        #endif
    }

    /// Shuts both directions down, waking a thread blocked in ``receive(into:)``.
    public func shutdownBoth() {
        #if os(Linux)
        _ = shutdown(rawValue, Int32(SHUT_RDWR))
        #else
        _ = shutdown(rawValue, SHUT_RDWR)
        #endif
    }

    private func setTCPOption(_ option: Int32) {
        var one: Int32 = 1
        _ = setsockopt(rawValue, Int32(IPPROTO_TCP), option, &one, socklen_t(MemoryLayout<Int32>.size))
    }
}

private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
