import Dispatch
import Glibc
import Synchronization

/// A minimal virtual card for vsmartcard's vpcd driver in pcscd: a TCP client that speaks vpcd's protocol.
///
/// Every message is a 2-byte big-endian length and a payload. A 1-byte payload is a control message: `00` power
/// off, `01` power on, `02` reset (none answered), `04` get ATR (answered with ``atr``). Any longer payload is a
/// command APDU, answered by ``answer``. Connecting inserts the card; ``remove()`` closes the socket, which vpcd
/// sees as the card leaving the field (pcscd notices on its next poll, ~400 ms).
///
/// The socket has `TCP_NODELAY` and `TCP_QUICKACK` (again before every read): without them each APDU through
/// pcscd and vpcd waits ~40 ms for a delayed ACK.
final class VirtualICC: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let atr: [UInt8]
    private let answer: @Sendable ([UInt8]) -> [UInt8]
    private let socket: Int32
    private let commands = Mutex<[[UInt8]]>([])
    private let finished = DispatchSemaphore(value: 0)

    /// Connects to vpcd on `127.0.0.1:port` and starts answering on a thread of its own.
    init(port: UInt16, atr: [UInt8], answer: @escaping @Sendable ([UInt8]) -> [UInt8]) throws {
        self.atr = atr
        self.answer = answer
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(socket)
            throw Failure(description: "connect to vpcd on 127.0.0.1:\(port): errno \(error)")
        }
        Self.setOption(socket, TCP_NODELAY)
        Self.setOption(socket, TCP_QUICKACK)
        self.socket = socket
        DispatchQueue(label: "proxima.test.vicc.\(port)").async { self.serve() }
    }

    /// The command APDUs received so far.
    var received: [[UInt8]] { commands.withLock { $0 } }

    /// Takes the card out of the field: closes the connection and waits until the serving thread has stopped.
    func remove() {
        Glibc.shutdown(socket, Int32(SHUT_RDWR))
        finished.wait()
        finished.signal()
    }

    private static func setOption(_ socket: Int32, _ option: Int32) {
        var one: Int32 = 1
        _ = setsockopt(socket, Int32(IPPROTO_TCP), option, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    private func serve() {
        defer {
            Glibc.close(socket)
            finished.signal()
        }
        while true {
            Self.setOption(socket, TCP_QUICKACK)
            guard let header = read(count: 2) else { return }
            let length = Int(header[0]) << 8 | Int(header[1])
            guard length > 0, let payload = read(count: length) else { return }
            if payload.count == 1 {
                if payload[0] == 0x04 { guard write(atr) else { return } }
                continue
            }
            commands.withLock { $0.append(payload) }
            guard write(answer(payload)) else { return }
        }
    }

    private func read(count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = buffer.withUnsafeMutableBytes { raw in
                recv(socket, raw.baseAddress.map { $0 + filled }, count - filled, 0)
            }
            guard n > 0 else { return nil }
            filled += n
        }
        return buffer
    }

    private func write(_ payload: [UInt8]) -> Bool {
        let frame = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        var sent = 0
        while sent < frame.count {
            let n = frame.withUnsafeBytes { raw in
                send(socket, raw.baseAddress.map { $0 + sent }, frame.count - sent, Int32(MSG_NOSIGNAL))
            }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }
}
