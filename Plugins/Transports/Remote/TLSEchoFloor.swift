internal import ExternalTransport
internal import Foundation
internal import Glibc
internal import ProximaSystem

/// The floor a remote APDU cannot beat, for `RemoteBenchmark`: round trips of a frame-sized message to an echo thread
/// over loopback TCP with TLS 1.3 (mutual authentication, the same certificates and ``TLSLink`` as the agent link),
/// with the caller blocked in `poll` on its own thread: two thread wake-ups, and one TLS record sealed and opened each
/// way, per round trip, and nothing else.
package enum TLSEchoFloor {
    /// How long `count` round trips of `size` bytes took (after 200 not timed).
    ///
    /// - Parameters:
    ///   - certificateAuthority, serverCertificate, serverKey, clientCertificate, clientKey: PEM files (the store CA,
    ///     the store's and an agent's pair).
    /// - Throws: ``TLSFailure`` or a socket error when the link cannot be set up or breaks.
    package static func measure(
        count: Int,
        size: Int = 80,
        certificateAuthority: String,
        serverCertificate: String,
        serverKey: String,
        clientCertificate: String,
        clientKey: String
    ) throws -> Duration {
        let server = try TLSContext(
            role: .server,
            certificate: serverCertificate,
            privateKey: serverKey,
            certificateAuthority: certificateAuthority
        )
        let client = try TLSContext(
            role: .client,
            certificate: clientCertificate,
            privateKey: clientKey,
            certificateAuthority: certificateAuthority
        )
        let listener = try FileDescriptor.listenTCP(host: "127.0.0.1", port: 0)
        defer { try? listener.close() }
        let port = listener.localPort
        let echo = Thread {
            var entry = pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 5000)
            guard let (descriptor, _) = (try? listener.acceptConnection()) ?? nil,
                let link = try? TLSLink.handshake(
                    descriptor: descriptor,
                    context: server,
                    deadline: .now + .seconds(5),
                    peerName: "the echo client"
                )
            else { return }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while let count = receive(link, into: &buffer) {
                guard send(link, buffer[..<count]) else { break }
            }
            link.terminate()
            link.closeOutput()
        }
        echo.start()
        let descriptor = try FileDescriptor.connectTCP(host: "127.0.0.1", port: port)
        let link = try TLSLink.handshake(
            descriptor: descriptor,
            context: client,
            serverName: "127.0.0.1",
            deadline: .now + .seconds(5),
            peerName: "the echo server"
        )
        defer {
            link.terminate()
            link.closeOutput()
        }
        let message = [UInt8](repeating: 0x41, count: size)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        func roundTrip() throws {
            guard send(link, message[...]) else { throw TLSFailure("the echo link broke") }
            var received = 0
            while received < size {
                guard let count = receive(link, into: &buffer) else { throw TLSFailure("the echo link broke") }
                received += count
            }
        }
        for _ in 0..<200 { try roundTrip() }
        let start = ContinuousClock.now
        for _ in 0..<count { try roundTrip() }
        return ContinuousClock.now - start
    }

    /// Writes all of `bytes` (polling while the socket is full); `false` when the link broke.
    private static func send(_ link: TLSLink, _ bytes: ArraySlice<UInt8>) -> Bool {
        var left = bytes
        while !left.isEmpty {
            switch link.write(left) {
            case .wrote(let count): left = left.dropFirst(count)
            case .wouldBlock: wait(link, for: Int16(POLLOUT))
            case .closed, .failed: return false
            }
        }
        return true
    }

    /// Reads what one TLS record brings (polling until one is complete); `nil` when the link ended.
    private static func receive(_ link: TLSLink, into buffer: inout [UInt8]) -> Int? {
        while true {
            switch link.read(into: &buffer) {
            case .bytes(let count): return count
            case .wouldBlock: wait(link, for: Int16(POLLIN))
            case .endOfFile, .failed: return nil
            }
        }
    }

    private static func wait(_ link: TLSLink, for events: Int16) {
        var entry = pollfd(fd: link.inputDescriptor, events: events, revents: 0)
        _ = poll(&entry, 1, 5000)
    }
}
