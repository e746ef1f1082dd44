internal import COpenSSL
internal import ExternalTransport
internal import Glibc
internal import ProximaCore
internal import ProximaCrypto
internal import ProximaSystem
internal import Synchronization

/// Why a TLS context could not be built or a handshake failed: what, with OpenSSL's own words.
public struct TLSFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }

    /// `what`, followed by the reasons OpenSSL queued on this thread (the queue is emptied).
    static func openSSL(_ what: String) -> TLSFailure {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            if let text = ERR_reason_error_string(code) { reasons.append(String(cString: text)) }
        }
        return TLSFailure(reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))")
    }
}

/// An `SSL_CTX` for the agent–store link: TLS 1.3 only, this side's certificate and key, the store CA as the only
/// trust anchor, and the peer's certificate required and verified (chain, validity, the purpose: `clientAuth` for an
/// agent, `serverAuth` for the store).
///
/// `@unchecked Sendable`: the context is configured in `init` and only read after that (OpenSSL allows `SSL_new`
/// from any thread on a context no longer changed).
final class TLSContext: @unchecked Sendable {
    enum Role { case server, client }

    let role: Role
    fileprivate let context: OpaquePointer

    /// OpenSSL writes to the socket with `write(2)`: a peer that is gone would raise `SIGPIPE` and end the process.
    /// It is ignored process-wide (the write then fails with `EPIPE`), as the External transport does for pipes.
    private static let ignoreBrokenPipe: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// - Parameters:
    ///   - certificate: PEM file, the leaf first (a chain may follow).
    ///   - privateKey: PEM file of its key.
    ///   - certificateAuthority: PEM file of the CA that issues the peers' certificates.
    ///   - revocationList: PEM file of the CA's CRL: when given, a peer certificate it lists is refused
    ///     (`X509_V_FLAG_CRL_CHECK`, the leaf's issuer; the CA is the root, so nothing above it is checked).
    /// - Throws: ``TLSFailure`` naming the file OpenSSL refused.
    init(
        role: Role,
        certificate: String,
        privateKey: String,
        certificateAuthority: String,
        revocationList: String? = nil
    ) throws(TLSFailure) {
        _ = Self.ignoreBrokenPipe
        self.role = role
        guard let context = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
            throw .openSSL("SSL_CTX_new")
        }
        self.context = context
        guard COpenSSL_SSL_CTX_set_tls13_only(context) == 1 else { throw .openSSL("restricting to TLS 1.3") }
        COpenSSL_SSL_CTX_set_stream_modes(context)
        // Read ahead: one read(2) takes what the socket holds (several records at once) instead of two per record
        // (its 5-byte header, then its body). read(into:) decrypts every complete record read ahead, so nothing
        // complete is left in OpenSSL's buffer while the link's thread waits in poll.
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_READ_AHEAD, 1, nil)
        guard SSL_CTX_use_certificate_chain_file(context, certificate) == 1 else {
            throw .openSSL("loading the certificate \(certificate)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKey, SSL_FILETYPE_PEM) == 1 else {
            throw .openSSL("loading the private key \(privateKey)")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw .openSSL("the private key \(privateKey) does not match the certificate \(certificate)")
        }
        guard SSL_CTX_load_verify_locations(context, certificateAuthority, nil) == 1 else {
            throw .openSSL("loading the CA certificate \(certificateAuthority)")
        }
        if let revocationList {
            guard let store = SSL_CTX_get_cert_store(context), X509_STORE_load_file(store, revocationList) == 1 else {
                throw .openSSL("loading the revocation list \(revocationList)")
            }
            X509_STORE_set_flags(store, UInt(X509_V_FLAG_CRL_CHECK))
        }
        let purpose = role == .server ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER
        guard SSL_CTX_set_purpose(context, purpose) == 1 else { throw .openSSL("setting the certificate purpose") }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        if role == .server, let names = SSL_load_client_CA_file(certificateAuthority) {
            SSL_CTX_set_client_CA_list(context, names)
        }
        ERR_clear_error()
    }

    deinit { SSL_CTX_free(context) }
}

/// What the peer's verified certificate says, for matching it against the allowed agents.
struct TLSPeerCertificate: Sendable {
    /// The subject in RFC 2253 form (`O=Proxima TEST,CN=lane-pc-1`, as ``X509Certificate/subject``).
    var subject: String
    /// SHA-256 of the DER SubjectPublicKeyInfo.
    var publicKeySHA256: [UInt8]
    /// The subjectAltName DNS names and IP addresses the certificate matches, checked with OpenSSL's own
    /// `X509_check_host` / `X509_check_ip_asc` against the names asked about.
    var matchedNames: Set<String>
}

private struct Access {
    var pendingInput = false
    var closed = false
}

/// One TLS 1.3 connection over a non-blocking TCP socket, as a ``DriverLink``.
///
/// **Threads.** The handshake, which blocks (it polls until done or its deadline), runs on the thread that calls
/// ``handshake(descriptor:context:serverName:peerNames:deadline:peerName:)``, never on the cooperative pool. After it
/// the socket is non-blocking and no OpenSSL call on it waits: the owning thread (a ``DriverConnection``'s or an
/// ``AgentSession``'s) reads and flushes queued frames, and a caller may write a frame at once; every such call
/// holds ``access``, as OpenSSL requires for one `SSL` object used from several threads.
///
/// `@unchecked Sendable`: `ssl` is only used under ``access`` once the handshake returned it.
final class TLSLink: DriverLink, @unchecked Sendable {
    let descriptor: FileDescriptor
    let peerName: String
    let peer: TLSPeerCertificate
    private let ssl: OpaquePointer
    /// Held across every OpenSSL call on ``ssl`` after the handshake (none blocks: the socket is non-blocking).
    /// `pendingInput` starts set: with read-ahead the handshake may have read the peer's first records (its `hello`,
    /// sent right after its Finished) into OpenSSL's buffer, where no poll of the socket would see them.
    private let access = Mutex(Access(pendingInput: true))
    /// The socket's inode, so a test can check that no descriptor of it outlives the link.
    let socketInode: UInt64?

    private init(descriptor: FileDescriptor, ssl: OpaquePointer, peer: TLSPeerCertificate, peerName: String) {
        self.descriptor = descriptor
        self.ssl = ssl
        self.peer = peer
        self.peerName = peerName
        socketInode = try? descriptor.status().inode
    }

    /// Runs the TLS handshake on `descriptor` (a connected socket, made non-blocking here) until `deadline`.
    ///
    /// - Parameters:
    ///   - serverName: the client's expected server name: sent as SNI when it is a DNS name, and checked against
    ///     the server certificate's subjectAltName (DNS or IP).
    ///   - peerNames: names to check the peer's certificate against (the allowed agents' DNS names).
    ///   - peerName: how messages name the peer.
    /// - Returns: the link, which owns `descriptor` from now on.
    /// - Throws: ``TLSFailure`` with the verification error or OpenSSL's reason; `descriptor` is closed.
    static func handshake(
        descriptor: FileDescriptor,
        context: TLSContext,
        serverName: String? = nil,
        peerNames: [String] = [],
        deadline: ContinuousClock.Instant,
        peerName: String
    ) throws(TLSFailure) -> TLSLink {
        descriptor.setNonBlocking()
        descriptor.setNoDelay()
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else {
            try? descriptor.close()
            throw .openSSL("SSL_new")
        }
        func fail(_ failure: TLSFailure) -> TLSFailure {
            // The alert OpenSSL queued goes out, and what the peer already sent is read, so that closing sends no
            // reset that would destroy the alert before the peer reads it.
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
            drain(descriptor, within: .milliseconds(250))
            SSL_free(ssl)
            try? descriptor.close()
            return failure
        }
        SSL_set_fd(ssl, descriptor.rawValue)
        if context.role == .client, let serverName {
            let isAddress = serverName.contains(":") || serverName.allSatisfy { $0.isNumber || $0 == "." }
            if !isAddress { _ = COpenSSL_SSL_set_host_name(ssl, serverName) }
            let parameters = SSL_get0_param(ssl)
            let set =
                isAddress
                ? X509_VERIFY_PARAM_set1_ip_asc(parameters, serverName) : SSL_set1_host(ssl, serverName)
            guard set == 1 else { throw fail(.openSSL("\"\(serverName)\" is not a host name or IP address")) }
        }
        while true {
            let result = context.role == .server ? SSL_accept(ssl) : SSL_connect(ssl)
            if result == 1 { break }
            let error = SSL_get_error(ssl, result)
            guard error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE else {
                throw fail(handshakeFailure(ssl, error: error, peerName: peerName))
            }
            let left = deadline - .now
            guard left > .zero else { throw fail(TLSFailure("\(peerName): no TLS handshake within the timeout")) }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            var entry = pollfd(
                fd: descriptor.rawValue,
                events: Int16(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT),
                revents: 0
            )
            _ = poll(&entry, 1, Int32(clamping: milliseconds + 1))
        }
        guard let certificate = SSL_get0_peer_certificate(ssl) else {
            throw fail(TLSFailure("\(peerName) sent no certificate"))
        }
        let peer: TLSPeerCertificate
        do {
            peer = try peerCertificate(certificate, names: peerNames)
        } catch {
            throw fail(error)
        }
        return TLSLink(descriptor: descriptor, ssl: ssl, peer: peer, peerName: peerName)
    }

    /// Shuts the write side and reads what the peer still sends until it closes or `timeout` passes.
    fileprivate static func drain(_ descriptor: FileDescriptor, within timeout: Duration) {
        #if os(Linux)
        _ = shutdown(descriptor.rawValue, Int32(SHUT_WR))
        #endif
        let deadline = ContinuousClock.now + timeout
        var sink = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            var entry = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) >= 0 else { break }
            if entry.revents == 0 { continue }
            let count = sink.withUnsafeMutableBytes { recv(descriptor.rawValue, $0.baseAddress, $0.count, 0) }
            if count <= 0 && !(count < 0 && (errno == EAGAIN || errno == EINTR)) { break }
        }
    }

    private static func handshakeFailure(_ ssl: OpaquePointer, error: Int32, peerName: String) -> TLSFailure {
        let verification = SSL_get_verify_result(ssl)
        if verification != X509_V_OK, let text = X509_verify_cert_error_string(verification) {
            ERR_clear_error()
            return TLSFailure("\(peerName): certificate refused: \(String(cString: text))")
        }
        if error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN {
            let queued = TLSFailure.openSSL("\(peerName): TLS handshake failed")
            if queued.reason != "\(peerName): TLS handshake failed" { return queued }
            return TLSFailure("\(peerName): the connection closed during the TLS handshake")
        }
        return .openSSL("\(peerName): TLS handshake failed")
    }

    private static func peerCertificate(_ certificate: OpaquePointer, names: [String]) throws(TLSFailure)
        -> TLSPeerCertificate
    {
        var derPointer: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(certificate, &derPointer)
        guard length > 0, let derPointer else { throw .openSSL("encoding the peer's certificate") }
        let der = Array(UnsafeBufferPointer(start: derPointer, count: Int(length)))
        CRYPTO_free(derPointer, #fileID, #line)
        var keyPointer: UnsafeMutablePointer<UInt8>? = nil
        let keyLength = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(certificate), &keyPointer)
        guard keyLength > 0, let keyPointer else { throw .openSSL("encoding the peer's public key") }
        let spki = Array(UnsafeBufferPointer(start: keyPointer, count: Int(keyLength)))
        CRYPTO_free(keyPointer, #fileID, #line)
        let subject: String
        let digest: [UInt8]
        do {
            subject = try X509Certificate(derRepresentation: der).subject
            digest = try SHA256.hash(spki)
        } catch {
            throw TLSFailure("reading the peer's certificate: \(error)")
        }
        var matched: Set<String> = []
        for name in names {
            let flags = UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT)
            if X509_check_host(certificate, name, name.utf8.count, flags, nil) == 1 { matched.insert(name) }
        }
        return TLSPeerCertificate(subject: subject, publicKeySHA256: digest, matchedNames: matched)
    }

    // MARK: DriverLink

    var inputDescriptor: Int32 { descriptor.rawValue }
    var outputDescriptor: Int32 { descriptor.rawValue }
    var logDescriptor: Int32? { nil }
    var hasBufferedInput: Bool {
        // Not SSL_has_pending: with read-ahead it also counts the start of a record not yet complete, and the thread
        // would spin on it instead of waiting in poll for the rest.
        access.withLock { state in !state.closed && (state.pendingInput || SSL_pending(ssl) > 0) }
    }
    var processID: Int32? { nil }
    var inodes: [UInt64] { socketInode.map { [$0] } ?? [] }
    /// Callers write at once: every OpenSSL call on the link holds ``access``, and none of them blocks (the socket
    /// is non-blocking), so the owning thread and a writer never wait on each other for long and one thread switch
    /// per frame is saved.
    var writesFromCallers: Bool { true }

    /// Reads every record OpenSSL can decrypt now (SSL_read returns one record at most), up to the buffer's size.
    func read(into buffer: inout [UInt8]) -> ReadOutcome {
        access.withLock { state in
            guard !state.closed else { return .endOfFile }
            ERR_clear_error()
            var total = 0
            var count: Int32 = 0
            buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                while total < raw.count {
                    count = SSL_read(ssl, base + total, Int32(clamping: raw.count - total))
                    guard count > 0 else { break }
                    total += Int(count)
                    // Nothing decrypted or read ahead is left: another SSL_read would only cost a read(2) and EAGAIN.
                    if SSL_has_pending(ssl) != 1 { break }
                }
            }
            if total > 0 {
                // A record cut short is waited for in poll; an alert or close_notify after the data is read next turn.
                let error = count > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, count)
                let stopped = error != SSL_ERROR_NONE && error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE
                state.pendingInput = total == buffer.count || stopped
                if !stopped { ERR_clear_error() }
                return .bytes(total)
            }
            state.pendingInput = false
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .wouldBlock
            case SSL_ERROR_ZERO_RETURN:
                return .endOfFile
            case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
                let code = errno
                return code == 0 ? .endOfFile : .failed(SystemCallError(call: "TLS read", errno: code))
            default:
                // The peer's alert (an expired or unknown certificate seen by the store) lands here on the agent.
                let failure = TLSFailure.openSSL("TLS read")
                return .failed(SystemCallError(call: failure.reason, errno: 0))
            }
        }
    }

    func write(_ bytes: ArraySlice<UInt8>) -> WriteOutcome {
        access.withLock { state in
            guard !state.closed else { return .closed }
            ERR_clear_error()
            let count = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(clamping: $0.count)) }
            if count > 0 { return .wrote(Int(count)) }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
            case SSL_ERROR_ZERO_RETURN: return .closed
            case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
                let code = errno
                return code == EPIPE || code == 0 ? .closed : .failed(SystemCallError(call: "TLS write", errno: code))
            default:
                // An alert the peer sent (the store refusing this agent's certificate) surfaces here or in read.
                return .failed(SystemCallError(call: TLSFailure.openSSL("TLS write").reason, errno: 0))
            }
        }
    }

    func readLog(into buffer: inout [UInt8]) -> ReadOutcome { .endOfFile }

    func terminate() {
        access.withLock { state in
            if !state.closed {
                _ = SSL_shutdown(ssl)  // a close_notify, best effort: the socket is non-blocking
                ERR_clear_error()
            }
        }
        descriptor.shutdownBoth()
    }

    /// Ends the link politely from the thread that owns it: a close_notify, then the socket's write side is shut
    /// and what the peer still sends is read and dropped until it closes too or `timeout` passes, so that a last
    /// frame (a `bye`) is not lost to a reset; then everything is freed.
    func closeGracefully(within timeout: Duration) {
        let open = access.withLock { state -> Bool in
            guard !state.closed else { return false }
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
            return true
        }
        guard open else { return }
        Self.drain(descriptor, within: timeout)
        closeOutput()
    }

    func closeInput() {}
    func closeLog() {}

    func closeOutput() {
        access.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            SSL_free(ssl)
            try? descriptor.close()
        }
    }

    func reap() -> DriverExitStatus? { nil }
}
