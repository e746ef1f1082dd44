internal import COpenSSL
import ProximaCore

// Helpers shared by the wrappers: OpenSSL's error queue, parameter arrays and pointer plumbing. Nothing here is
// public, so `COpenSSL` never appears in the module's interface.

/// Empties OpenSSL's thread-local error queue into one line, so a reason can say what OpenSSL reported and the next
/// call on this thread starts clean.
func drainOpenSSLErrors() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        let count = buffer.count
        buffer.withUnsafeMutableBufferPointer { ERR_error_string_n(code, $0.baseAddress, count) }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        messages.append(String(decoding: bytes, as: UTF8.self))
    }
    return messages.isEmpty ? "no OpenSSL error queued" : messages.joined(separator: "; ")
}

/// A ``CryptoError/Code/libraryFailure`` naming the step, with OpenSSL's error queue as detail.
func libraryFailure(_ step: String) -> CryptoError {
    CryptoError(.libraryFailure, "\(step) failed in OpenSSL: \(drainOpenSSLErrors())")
}

/// Throws ``libraryFailure(_:)`` unless an OpenSSL call returned 1 (its usual success value).
func check(_ result: Int32, _ step: String) throws {
    guard result == 1 else { throw libraryFailure(step) }
}

/// Throws `ProximaError.invalidArgument` when a buffer is too long for OpenSSL's `int` lengths.
func int32Length(_ count: Int, _ what: String) throws -> Int32 {
    guard let length = Int32(exactly: count) else {
        throw ProximaError(.invalidArgument, "\(what) of \(count) bytes is longer than OpenSSL accepts in one call")
    }
    return length
}

extension Array where Element == UInt8 {
    /// Calls `body` with a pointer that is never `nil`, even for an empty array: some OpenSSL calls treat a `NULL`
    /// buffer as "parameter not given" rather than "zero bytes".
    func withNonNullPointer<R>(_ body: (UnsafePointer<UInt8>, Int) throws -> R) rethrows -> R {
        if isEmpty {
            var placeholder: UInt8 = 0
            return try body(&placeholder, 0)
        }
        return try withUnsafeBufferPointer { try body($0.baseAddress!, $0.count) }
    }
}

/// Compares two byte strings in time that depends only on their lengths.
func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for i in lhs.indices { difference |= lhs[i] ^ rhs[i] }
    return difference == 0
}

/// An `OSSL_PARAM` array and everything it points at.
///
/// `OSSL_PARAM` stores pointers to its key and value, not copies, so both live in allocations owned by this list
/// until it is released; the allocations are cleansed before they are freed because values can be key material.
/// Not `Sendable`: build, use and drop it within one call.
final class ParameterList {
    private var allocations: [UnsafeMutableRawBufferPointer] = []
    private var parameters: [OSSL_PARAM] = []

    init() {}

    deinit {
        for allocation in allocations {
            OPENSSL_cleanse(allocation.baseAddress, allocation.count)
            allocation.deallocate()
        }
    }

    /// Copies `bytes` into a new allocation with one zero byte after them, so strings are NUL-terminated and an
    /// empty value still has a non-null address.
    private func store(_ bytes: [UInt8]) -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count + 1, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        buffer.copyBytes(from: bytes)
        allocations.append(buffer)
        return buffer
    }

    private func key(_ name: String) -> UnsafePointer<CChar> {
        let buffer = store(Array(name.utf8))
        return UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: CChar.self))
    }

    /// A UTF-8 string parameter such as `digest = "SHA256"`.
    func append(_ name: String, utf8 value: String) {
        let bytes = Array(value.utf8)
        let buffer = store(bytes)
        let pointer = buffer.baseAddress!.assumingMemoryBound(to: CChar.self)
        parameters.append(OSSL_PARAM_construct_utf8_string(key(name), pointer, bytes.count))
    }

    /// An octet-string parameter; an empty value still gets a non-null buffer of size 0.
    func append(_ name: String, octets value: [UInt8]) {
        let buffer = store(value)
        parameters.append(OSSL_PARAM_construct_octet_string(key(name), buffer.baseAddress, value.count))
    }

    /// A C `int` parameter such as the HKDF `mode`.
    func append(_ name: String, int value: Int32) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: MemoryLayout<Int32>.size, alignment: 8)
        buffer.storeBytes(of: value, as: Int32.self)
        allocations.append(buffer)
        parameters.append(OSSL_PARAM_construct_int(key(name), buffer.baseAddress!.assumingMemoryBound(to: Int32.self)))
    }

    /// An unsigned big-number parameter given big-endian; `OSSL_PARAM` wants it in native byte order.
    func append(_ name: String, unsignedBigEndian value: [UInt8]) {
        let native = 1.littleEndian == 1 ? Array(value.reversed()) : value
        let buffer = store(native)
        parameters.append(
            OSSL_PARAM_construct_BN(key(name), buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), value.count)
        )
    }

    /// Calls `body` with the parameters followed by the end marker.
    func withParameters<R>(_ body: (UnsafeMutablePointer<OSSL_PARAM>) throws -> R) rethrows -> R {
        var terminated = parameters + [OSSL_PARAM_construct_end()]
        return try terminated.withUnsafeMutableBufferPointer { try body($0.baseAddress!) }
    }
}

/// Owns one `EVP_PKEY`.
///
/// `@unchecked Sendable`: nothing changes the key once it is made (only parameters are read and operations run on
/// contexts of their own), and OpenSSL 3 allows concurrent operations on a key that nobody modifies.
final class OwnedKey: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// The key of exactly one DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7); trailing bytes are refused.
    /// - Throws: ``CryptoError/Code/invalidKey``.
    static func subjectPublicKeyInfo(_ der: [UInt8]) throws -> OwnedKey {
        try der.withNonNullPointer { start, count -> OwnedKey in
            var cursor: UnsafePointer<UInt8>? = start
            guard let key = d2i_PUBKEY(nil, &cursor, count) else {
                throw CryptoError(.invalidKey, "not a DER SubjectPublicKeyInfo (\(drainOpenSSLErrors()))")
            }
            let owned = OwnedKey(key)
            guard let cursor, cursor - start == count else {
                throw CryptoError(.invalidKey, "bytes follow the DER SubjectPublicKeyInfo")
            }
            return owned
        }
    }

    /// The key of a PEM `PUBLIC KEY` block.
    /// - Throws: ``CryptoError/Code/invalidKey``.
    static func publicKeyPEM(_ text: String) throws -> OwnedKey {
        try withMemoryBIO(Array(text.utf8)) { bio -> OwnedKey in
            guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else {
                throw CryptoError(.invalidKey, "no PUBLIC KEY block in the PEM text (\(drainOpenSSLErrors()))")
            }
            return OwnedKey(key)
        }
    }

    /// The key of an unencrypted PKCS#8 or SEC 1 PEM private key; an encrypted one is refused, never prompted for.
    /// - Throws: ``CryptoError/Code/invalidKey``.
    static func privateKeyPEM(_ text: String) throws -> OwnedKey {
        try withMemoryBIO(Array(text.utf8)) { bio -> OwnedKey in
            let refusePassword:
                @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = {
                    _,
                    _,
                    _,
                    _ in -1
                }
            guard let key = PEM_read_bio_PrivateKey(bio, nil, refusePassword, nil) else {
                throw CryptoError(
                    .invalidKey,
                    "no unencrypted PKCS#8 or SEC 1 private key in the PEM text (\(drainOpenSSLErrors()))"
                )
            }
            return OwnedKey(key)
        }
    }
}

/// Calls `body` with a read-only memory BIO over `bytes`.
func withMemoryBIO<R>(_ bytes: [UInt8], _ body: (OpaquePointer) throws -> R) throws -> R {
    let length = try int32Length(bytes.count, "PEM or DER input")
    return try bytes.withNonNullPointer { pointer, _ in
        guard let bio = BIO_new_mem_buf(pointer, length) else { throw libraryFailure("creating a memory BIO") }
        defer { BIO_free(bio) }
        return try body(bio)
    }
}

/// Calls `write` with an empty writable memory BIO and returns what it wrote.
func readingMemoryBIO(_ step: String, _ write: (OpaquePointer) -> Int32) throws -> [UInt8] {
    guard let bio = BIO_new(BIO_s_mem()) else { throw libraryFailure("creating a memory BIO") }
    defer { BIO_free(bio) }
    try check(write(bio), step)
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1024)
    let chunkCount = Int32(chunk.count)
    while true {
        let read = chunk.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, chunkCount) }
        guard read > 0 else { break }
        output += chunk[..<Int(read)]
    }
    OPENSSL_cleanse(&chunk, chunk.count)
    return output
}
