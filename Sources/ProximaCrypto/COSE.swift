import ProximaCore

/// The COSE algorithms Proxima signs, verifies and MACs with (RFC 9053 §2.1, §3.1; IANA COSE Algorithms).
public enum COSEAlgorithm: Int, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// ECDSA with SHA-256 (on P-256 in ISO/IEC 18013-5).
    case es256 = -7
    /// ECDSA with SHA-384.
    case es384 = -35
    /// ECDSA with SHA-512.
    case es512 = -36
    /// HMAC with SHA-256, 256-bit tag ("HMAC 256/256").
    case hmac256 = 5

    public var description: String {
        switch self {
        case .es256: "ES256"
        case .es384: "ES384"
        case .es512: "ES512"
        case .hmac256: "HMAC 256/256"
        }
    }

    /// The hash of the algorithm.
    public var digest: DigestAlgorithm {
        switch self {
        case .es256, .hmac256: .sha256
        case .es384: .sha384
        case .es512: .sha512
        }
    }

    /// The ECDSA algorithm ISO/IEC 18013-5 §9.1.3.6 pairs with a curve (ES256 on P-256, …).
    public static func ecdsa(for curve: EllipticCurve) -> COSEAlgorithm {
        switch curve {
        case .p256: .es256
        case .p384: .es384
        case .p521: .es512
        }
    }
}

/// Why a COSE structure was refused: each check has its own code, so a verifier can say which one failed.
public struct COSEError: Error, Hashable, Sendable, ClassifiedError {
    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var kernelCode: ProximaError.Code { .malformedData }
    public var description: String { "COSE \(code): \(reason)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case malformed, wrongTag, unsupportedAlgorithm, algorithmNotProtected, keyMismatch, badSignature, badTag
            case missingPayload, invalidKey
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// Not a COSE array of the right shape: element count or types, a protected header that is no map.
        public static let malformed = Code(.malformed)
        /// A CBOR tag other than the structure's own (18 for COSE_Sign1, 17 for COSE_Mac0).
        public static let wrongTag = Code(.wrongTag)
        /// An `alg` that is absent, not an integer, or not one this verifier accepts.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// `alg` appears in the unprotected header only (ISO/IEC 18013-5 §9.1.3.6 requires it protected).
        public static let algorithmNotProtected = Code(.algorithmNotProtected)
        /// The key is on another curve than the algorithm (ES384 with a P-256 key) or of another kind.
        public static let keyMismatch = Code(.keyMismatch)
        /// The signature does not verify over the Sig_structure.
        public static let badSignature = Code(.badSignature)
        /// The MAC tag does not match the MAC_structure.
        public static let badTag = Code(.badTag)
        /// The payload is detached (nil) and none was given.
        public static let missingPayload = Code(.missingPayload)
        /// A COSE_Key that is not a supported EC2 key, or whose point is not on its curve.
        public static let invalidKey = Code(.invalidKey)
    }
}

/// COSE header labels Proxima reads (RFC 9052 §3.1, RFC 9360 §2).
public enum COSEHeader {
    public static let algorithm = 1
    public static let contentType = 3
    public static let keyIdentifier = 4
    /// `x5chain`: one DER certificate as a bstr, or an array of them, leaf first (RFC 9360).
    public static let x5chain = 33
}

// MARK: - COSE_Sign1

/// A COSE_Sign1 message (RFC 9052 §4.2): one signer, the protected header kept as the exact bytes received.
public struct COSESign1: Hashable, Sendable {
    /// The CBOR tag of a tagged COSE_Sign1.
    public static let tag: UInt64 = 18

    /// The serialized protected header exactly as received (empty or an encoded map).
    public let protectedBytes: [UInt8]
    /// The protected header decoded.
    public let protected: CBORValue
    /// The unprotected header.
    public let unprotected: CBORValue
    /// The payload, or `nil` when it is detached (ISO/IEC 18013-5 readerAuth and deviceSignature).
    public let payload: [UInt8]?
    /// The signature, `r || s` for ECDSA.
    public let signature: [UInt8]

    /// Parses a COSE_Sign1 from its value (tag 18 or untagged).
    /// - Throws: ``COSEError`` `.wrongTag` for another tag, `.malformed` for another shape.
    public init(_ value: CBORValue) throws {
        let parts = try coseArray(value, tag: Self.tag, count: 4, "COSE_Sign1")
        (protectedBytes, protected) = try protectedHeader(parts[0], "COSE_Sign1")
        guard case .map = parts[1] else { throw COSEError(.malformed, "COSE_Sign1 unprotected header is not a map") }
        unprotected = parts[1]
        switch parts[2] {
        case .byteString(let bytes): payload = bytes
        case .null: payload = nil
        default: throw COSEError(.malformed, "COSE_Sign1 payload is neither a bstr nor nil")
        }
        guard let signature = parts[3].bytesValue else {
            throw COSEError(.malformed, "COSE_Sign1 signature is not a bstr")
        }
        self.signature = signature
    }

    /// Parses a COSE_Sign1 from its encoding.
    /// - Throws: ``CBORError`` when the bytes are not CBOR; ``COSEError`` as ``init(_:)``.
    public init(encoded: [UInt8]) throws {
        try self.init(try CBORDecoder.decode(encoded))
    }

    /// Signs `payload` with `key`, the algorithm in the protected header.
    ///
    /// - Parameters:
    ///   - payload: The content to sign.
    ///   - detached: When `true`, the message carries `nil` and the payload travels separately.
    ///   - key: The signer's key; the algorithm follows its curve (ES256 on P-256, …).
    ///   - unprotected: The unprotected header (an `x5chain`, a `kid`), a map.
    ///   - externalAAD: Application data bound into the signature but not carried.
    /// - Throws: ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
    public static func sign(
        payload: [UInt8],
        detached: Bool = false,
        key: ECPrivateKey,
        unprotected: CBORValue = .map([]),
        externalAAD: [UInt8] = []
    ) throws -> COSESign1 {
        let algorithm = COSEAlgorithm.ecdsa(for: key.curve)
        let protectedBytes = CBOREncoder.encode([CBORValue(COSEHeader.algorithm): CBORValue(algorithm.rawValue)])
        let toBeSigned = sigStructure(protectedBytes: protectedBytes, externalAAD: externalAAD, payload: payload)
        let signature = try key.signature(for: toBeSigned, digest: algorithm.digest)
        return try COSESign1(
            .array([
                .byteString(protectedBytes), unprotected, detached ? .null : .byteString(payload),
                .byteString(signature),
            ])
        )
    }

    /// The untagged COSE_Sign1 value (as ISO/IEC 18013-5 carries issuerAuth, readerAuth and deviceSignature).
    public var value: CBORValue {
        .array([
            .byteString(protectedBytes), unprotected, payload.map { .byteString($0) } ?? .null, .byteString(signature),
        ])
    }

    /// The deterministic encoding of ``value``; `tagged` adds tag 18.
    public func encoded(tagged: Bool = false) -> [UInt8] {
        CBOREncoder.encode(tagged ? .tagged(Self.tag, value) : value)
    }

    /// The algorithm named in the protected header.
    /// - Throws: ``COSEError`` `.algorithmNotProtected` when `alg` is only unprotected, `.unsupportedAlgorithm`
    ///   when absent, not an integer, or not an ECDSA algorithm.
    /// - Parameter acceptsUnprotected: Whether an `alg` only in the unprotected header is taken when the protected
    ///   header is empty (RFC 9052 allows it; ISO/IEC 18013-5 does not, hence `false` unless asked).
    public func algorithm(acceptsUnprotected: Bool = false) throws -> COSEAlgorithm {
        try protectedAlgorithm(
            protected,
            acceptsUnprotected ? unprotected : .map([]),
            unprotected,
            allowed: [.es256, .es384, .es512],
            "COSE_Sign1"
        )
    }

    /// The `x5chain` certificates (DER), leaf first, from the unprotected or protected header; empty when absent.
    /// - Throws: ``COSEError/Code/malformed`` when the label holds something other than a bstr or bstrs.
    public func certificateChain() throws -> [[UInt8]] {
        guard let chain = unprotected[COSEHeader.x5chain] ?? protected[COSEHeader.x5chain] else { return [] }
        if let single = chain.bytesValue { return [single] }
        guard let items = chain.arrayValue, !items.isEmpty else {
            throw COSEError(.malformed, "x5chain is neither a bstr nor a non-empty array of bstr")
        }
        return try items.map {
            guard let der = $0.bytesValue else { throw COSEError(.malformed, "x5chain holds a non-bstr entry") }
            return der
        }
    }

    /// Checks the signature with `key` over the Sig_structure (RFC 9052 §4.4).
    ///
    /// - Parameters:
    ///   - key: The signer's public key; its curve must be the algorithm's.
    ///   - externalAAD: The external additional authenticated data (empty unless the protocol says otherwise).
    ///   - detachedPayload: The payload when the message carries `nil`; ignored otherwise.
    ///   - acceptsUnprotectedAlgorithm: As in ``algorithm(acceptsUnprotected:)``.
    /// - Throws: ``COSEError``: `.unsupportedAlgorithm`, `.algorithmNotProtected`, `.keyMismatch`,
    ///   `.missingPayload`, `.badSignature`.
    public func verify(
        with key: ECPublicKey,
        externalAAD: [UInt8] = [],
        detachedPayload: [UInt8]? = nil,
        acceptsUnprotectedAlgorithm: Bool = false
    ) throws {
        let algorithm = try algorithm(acceptsUnprotected: acceptsUnprotectedAlgorithm)
        guard algorithm == COSEAlgorithm.ecdsa(for: key.curve) else {
            throw COSEError(.keyMismatch, "\(algorithm) message, \(key.curve) key")
        }
        guard let content = payload ?? detachedPayload else {
            throw COSEError(.missingPayload, "COSE_Sign1 payload is detached and none was supplied")
        }
        let toBeSigned = Self.sigStructure(protectedBytes: protectedBytes, externalAAD: externalAAD, payload: content)
        guard key.isValidSignature(signature, for: toBeSigned, digest: algorithm.digest) else {
            throw COSEError(.badSignature, "\(algorithm) signature does not verify")
        }
    }

    /// `Sig_structure = ["Signature1", body_protected, external_aad, payload]`, encoded (RFC 9052 §4.4).
    ///
    /// A protected header received as the empty map `A0` is signed as the zero-length string, as RFC 9052 §3
    /// tells recipients to accept.
    public static func sigStructure(protectedBytes: [UInt8], externalAAD: [UInt8], payload: [UInt8]) -> [UInt8] {
        let bodyProtected = protectedBytes == [0xA0] ? [] : protectedBytes
        return CBOREncoder.encode(
            ["Signature1", .byteString(bodyProtected), .byteString(externalAAD), .byteString(payload)]
        )
    }
}

// MARK: - COSE_Mac0

/// A COSE_Mac0 message (RFC 9052 §6.2) with HMAC 256/256, as ISO/IEC 18013-5 deviceMac uses it.
public struct COSEMac0: Hashable, Sendable {
    /// The CBOR tag of a tagged COSE_Mac0.
    public static let tag: UInt64 = 17

    public let protectedBytes: [UInt8]
    public let protected: CBORValue
    public let unprotected: CBORValue
    /// The payload, or `nil` when detached.
    public let payload: [UInt8]?
    /// The MAC tag.
    public let macTag: [UInt8]

    /// Parses a COSE_Mac0 from its value (tag 17 or untagged).
    /// - Throws: ``COSEError`` `.wrongTag` or `.malformed`.
    public init(_ value: CBORValue) throws {
        let parts = try coseArray(value, tag: Self.tag, count: 4, "COSE_Mac0")
        (protectedBytes, protected) = try protectedHeader(parts[0], "COSE_Mac0")
        guard case .map = parts[1] else { throw COSEError(.malformed, "COSE_Mac0 unprotected header is not a map") }
        unprotected = parts[1]
        switch parts[2] {
        case .byteString(let bytes): payload = bytes
        case .null: payload = nil
        default: throw COSEError(.malformed, "COSE_Mac0 payload is neither a bstr nor nil")
        }
        guard let macTag = parts[3].bytesValue else { throw COSEError(.malformed, "COSE_Mac0 tag is not a bstr") }
        self.macTag = macTag
    }

    /// A COSE_Mac0 with HMAC 256/256 over `payload` under `key`.
    /// - Throws: ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
    public static func authenticate(
        payload: [UInt8],
        detached: Bool = false,
        key: [UInt8],
        externalAAD: [UInt8] = []
    ) throws -> COSEMac0 {
        let protectedBytes = CBOREncoder.encode([
            CBORValue(COSEHeader.algorithm): CBORValue(COSEAlgorithm.hmac256.rawValue)
        ])
        let structure = macStructure(protectedBytes: protectedBytes, externalAAD: externalAAD, payload: payload)
        let tag = try HMAC.authenticationCode(for: structure, key: key, digest: .sha256)
        return try COSEMac0(
            .array([.byteString(protectedBytes), .map([]), detached ? .null : .byteString(payload), .byteString(tag)])
        )
    }

    /// The untagged COSE_Mac0 value.
    public var value: CBORValue {
        .array([
            .byteString(protectedBytes), unprotected, payload.map { .byteString($0) } ?? .null, .byteString(macTag),
        ])
    }

    /// Checks the tag over the MAC_structure (RFC 9052 §6.3) in constant time.
    /// - Throws: ``COSEError``: `.unsupportedAlgorithm` (anything but HMAC 256/256), `.algorithmNotProtected`,
    ///   `.missingPayload`, `.badTag`.
    public func verify(key: [UInt8], externalAAD: [UInt8] = [], detachedPayload: [UInt8]? = nil) throws {
        _ = try protectedAlgorithm(protected, .map([]), unprotected, allowed: [.hmac256], "COSE_Mac0")
        guard let content = payload ?? detachedPayload else {
            throw COSEError(.missingPayload, "COSE_Mac0 payload is detached and none was supplied")
        }
        let structure = Self.macStructure(protectedBytes: protectedBytes, externalAAD: externalAAD, payload: content)
        let expected = try HMAC.authenticationCode(for: structure, key: key)
        guard constantTimeEquals(expected, macTag) else {
            throw COSEError(.badTag, "HMAC 256/256 tag does not match")
        }
    }

    /// `MAC_structure = ["MAC0", protected, external_aad, payload]`, encoded (RFC 9052 §6.3).
    public static func macStructure(protectedBytes: [UInt8], externalAAD: [UInt8], payload: [UInt8]) -> [UInt8] {
        let bodyProtected = protectedBytes == [0xA0] ? [] : protectedBytes
        return CBOREncoder.encode(["MAC0", .byteString(bodyProtected), .byteString(externalAAD), .byteString(payload)])
    }
}

// MARK: - COSE_Key

/// A COSE_Key of type EC2 (RFC 9052 §7, RFC 9053 §7.1.1) on P-256, P-384 or P-521.
public enum COSEKey {
    /// The public key of an EC2 COSE_Key map (`kty` 2, `crv` 1–3, `x`, `y` as bstr); extra labels are ignored.
    /// - Throws: ``COSEError/Code/invalidKey`` for another key type or curve, a compressed `y`, or a point not on
    ///   the curve.
    public static func publicKey(from value: CBORValue) throws -> ECPublicKey {
        guard case .map = value else { throw COSEError(.invalidKey, "COSE_Key is not a map") }
        guard value[1]?.intValue == 2 else { throw COSEError(.invalidKey, "COSE_Key kty is not 2 (EC2)") }
        guard let identifier = value[-1]?.intValue, let curve = EllipticCurve(coseIdentifier: identifier) else {
            throw COSEError(.invalidKey, "COSE_Key crv is not P-256, P-384 or P-521")
        }
        guard let x = value[-2]?.bytesValue, let y = value[-3]?.bytesValue else {
            throw COSEError(.invalidKey, "COSE_Key lacks x or y as a bstr (compressed points are not accepted)")
        }
        do {
            return try ECPublicKey(curve: curve, x: x, y: y)
        } catch {
            throw COSEError(.invalidKey, "COSE_Key point: \(error)")
        }
    }

    /// The EC2 COSE_Key map of a public key: `{1: 2, -1: crv, -2: x, -3: y}`.
    public static func value(of key: ECPublicKey) -> CBORValue {
        [1: 2, -1: CBORValue(key.curve.coseIdentifier), -2: .byteString(key.x), -3: .byteString(key.y)]
    }
}

// MARK: - Shared parsing

private func coseArray(_ value: CBORValue, tag: UInt64, count: Int, _ what: String) throws -> [CBORValue] {
    var content = value
    if case .tagged(let found, let inner) = value {
        guard found == tag else { throw COSEError(.wrongTag, "\(what) has tag \(found), expected \(tag) or none") }
        content = inner
    }
    guard let parts = content.arrayValue, parts.count == count else {
        throw COSEError(.malformed, "\(what) is not an array of \(count) elements")
    }
    return parts
}

private func protectedHeader(_ value: CBORValue, _ what: String) throws -> ([UInt8], CBORValue) {
    guard let bytes = value.bytesValue else { throw COSEError(.malformed, "\(what) protected header is not a bstr") }
    if bytes.isEmpty { return (bytes, .map([])) }
    guard let header = try? CBORDecoder.decode(bytes, limits: CBORDecoder.Limits(maximumDepth: 8)), case .map = header
    else { throw COSEError(.malformed, "\(what) protected header is not an encoded map") }
    return (bytes, header)
}

/// The `alg` of the protected header, or of `fallback` when the protected header is empty.
private func protectedAlgorithm(
    _ protected: CBORValue,
    _ fallback: CBORValue,
    _ unprotected: CBORValue,
    allowed: Set<COSEAlgorithm>,
    _ what: String
) throws -> COSEAlgorithm {
    let emptyProtected = protected.mapValue?.isEmpty ?? false
    guard let label = protected[COSEHeader.algorithm] ?? (emptyProtected ? fallback[COSEHeader.algorithm] : nil) else {
        if unprotected[COSEHeader.algorithm] != nil {
            throw COSEError(.algorithmNotProtected, "\(what) alg is in the unprotected header only")
        }
        throw COSEError(.unsupportedAlgorithm, "\(what) has no alg")
    }
    guard let number = label.intValue, let algorithm = COSEAlgorithm(rawValue: number), allowed.contains(algorithm)
    else { throw COSEError(.unsupportedAlgorithm, "\(what) alg \(label.diagnostic) is not accepted here") }
    return algorithm
}
