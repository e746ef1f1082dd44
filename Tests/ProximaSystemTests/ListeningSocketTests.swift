import ProximaSystem
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("ProximaSystem: listening sockets and wake pipes")
struct ListeningSocketTests {
    @Test("listen on port 0, accept a connection with its peer address, bytes pass both ways")
    func acceptsAConnection() throws {
        let listener = try FileDescriptor.listenTCP(host: "127.0.0.1", port: 0)
        defer { try? listener.close() }
        let port = listener.localPort
        #expect(port > 0)
        #expect(try listener.acceptConnection() == nil, "nothing waits yet: non-blocking")
        let client = try FileDescriptor.connectTCP(host: "127.0.0.1", port: port)
        defer { try? client.close() }
        var entry = pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0)
        #expect(poll(&entry, 1, 5000) == 1)
        let (server, peer) = try #require(try listener.acceptConnection())
        defer { try? server.close() }
        #expect(peer.hasPrefix("127.0.0.1:"))
        #expect(fcntl(server.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(server.rawValue, F_GETFL) & O_NONBLOCK != 0)
        try client.sendAll([1, 2, 3])
        var entry2 = pollfd(fd: server.rawValue, events: Int16(POLLIN), revents: 0)
        #expect(poll(&entry2, 1, 5000) == 1)
        var buffer = [UInt8](repeating: 0, count: 8)
        let count = try buffer.withUnsafeMutableBytes { try server.receive(into: $0) }
        #expect(Array(buffer[..<count]) == [1, 2, 3])
    }

    @Test("a host that is not an IPv4 address and a port in use are refused with what and where")
    func refusals() throws {
        #expect(throws: FileDescriptor.ListenFailure.self) { try FileDescriptor.listenTCP(host: "localhost", port: 0) }
        let first = try FileDescriptor.listenTCP(host: "127.0.0.1", port: 0)
        defer { try? first.close() }
        do {
            let second = try FileDescriptor.listenTCP(host: "127.0.0.1", port: first.localPort)
            try? second.close()
            Issue.record("a second listener bound the same port")
        } catch {
            #expect(error.description.hasPrefix("cannot listen on 127.0.0.1:\(first.localPort): "))
            #expect(error.errno == Errno(rawValue: EADDRINUSE))
        }
    }

    @Test("a wake pipe is non-blocking and close-on-exec at both ends")
    func wakePipe() throws {
        let (read, write) = try FileDescriptor.wakePipe()
        defer {
            try? read.close()
            try? write.close()
        }
        for end in [read, write] {
            #expect(fcntl(end.rawValue, F_GETFD) & FD_CLOEXEC != 0)
            #expect(fcntl(end.rawValue, F_GETFL) & O_NONBLOCK != 0)
        }
        #expect(throws: Errno.wouldBlock) { _ = try read.read(upTo: 1) }
    }
}
