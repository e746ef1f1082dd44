internal import COpenSSL
import ProximaCore
import Synchronization

/// An X.509 certificate (RFC 5280) read by OpenSSL, with the fields chain and profile checks need.
///
/// The value holds the DER and the fields read from it; each chain check parses the DER again, so the type is
/// `Sendable` without holding OpenSSL objects.
public struct X509Certificate: Hashable, Sendable, CustomStringConvertible {
    /// The certificate exactly as received.
    public let derRepresentation: [UInt8]
    /// OpenSSL's parse of it, kept: OpenSSL 3.0 decodes the subject key while parsing, which costs more than
    /// every check after it, so a chain check reuses this parse instead of parsing the DER again.
    fileprivate let handle: CertificateHandle
    /// The subject in RFC 2253 form, last RDN first (`C=US,CN=utopia ds`).
    public let subject: String
    /// The issuer in RFC 2253 form.
    public let issuer: String
    /// The subject's countryName (C), if present.
    public let subjectCountry: String?
    /// The subject's stateOrProvinceName (ST), if present.
    public let subjectStateOrProvince: String?
    /// The serial number, upper-case hex.
    public let serialNumber: String
    /// notBefore, seconds since 1970 UTC.
    public let notBefore: Int64
    /// notAfter, seconds since 1970 UTC.
    public let notAfter: Int64
    /// The subject public key, when it is an EC key on a supported curve.
    public let publicKey: ECPublicKey?
    /// The keyUsage bits (RFC 5280 §4.2.1.3), or `nil` when the extension is absent.
    public let keyUsage: KeyUsage?
    /// The extendedKeyUsage OIDs in dotted form, empty when the extension is absent.
    public let extendedKeyUsage: [String]
    /// Whether basicConstraints says cA.
    public let isCertificateAuthority: Bool
    /// basicConstraints pathLenConstraint, if present.
    public let pathLengthConstraint: Int?
    /// Whether subject equals issuer (and the authority key identifier, if any, names the certificate's own key):
    /// OpenSSL's `EXFLAG_SS`. The signature is not checked here; ``validatePath(intermediates:anchors:at:)`` does.
    public let isSelfIssued: Bool
    /// The subjectKeyIdentifier extension's key identifier (RFC 5280 §4.2.1.2), or `nil` when absent.
    public let subjectKeyIdentifier: [UInt8]?
    /// The serial number's content octets, big-endian, as DER carries them (a leading `00` keeps it positive).
    public var serialNumberBytes: [UInt8] { [UInt8](hex: serialNumber) ?? [] }

    /// keyUsage bits, named as RFC 5280 §4.2.1.3 names them.
    public struct KeyUsage: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let digitalSignature = KeyUsage(rawValue: 0x0080)
        public static let keyCertSign = KeyUsage(rawValue: 0x0004)
        public static let cRLSign = KeyUsage(rawValue: 0x0002)
    }

    /// A certificate from DER.
    /// - Throws: ``X509Error/Code/malformedCertificate`` unless the bytes are exactly one certificate.
    public init(derRepresentation der: [UInt8]) throws {
        let certificate = try OwnedCertificate(der: der)
        try self.init(certificate, der: der)
    }

    /// Every certificate of a PEM text (`-----BEGIN CERTIFICATE-----` blocks), in order.
    /// - Throws: ``X509Error/Code/malformedCertificate`` when there is none or one does not parse.
    public static func certificates(pemRepresentation text: String) throws -> [X509Certificate] {
        try withMemoryBIO(Array(text.utf8)) { bio -> [X509Certificate] in
            var out: [X509Certificate] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                let owned = OwnedCertificate(certificate)
                out.append(try X509Certificate(owned, der: try owned.der()))
            }
            _ = drainOpenSSLErrors()
            guard !out.isEmpty else {
                throw X509Error(.malformedCertificate, "no CERTIFICATE block in the PEM text")
            }
            return out
        }
    }

    private init(_ certificate: OwnedCertificate, der: [UInt8]) throws {
        let pointer = certificate.pointer
        derRepresentation = der
        handle = CertificateHandle(certificate)
        subject = try distinguishedName(X509_get_subject_name(pointer))
        issuer = try distinguishedName(X509_get_issuer_name(pointer))
        subjectCountry = nameEntry(X509_get_subject_name(pointer), NID_countryName)
        subjectStateOrProvince = nameEntry(X509_get_subject_name(pointer), NID_stateOrProvinceName)
        serialNumber = serialHex(X509_get0_serialNumber(pointer))
        guard let notBefore = unixTime(X509_get0_notBefore(pointer)),
            let notAfter = unixTime(X509_get0_notAfter(pointer))
        else { throw X509Error(.malformedCertificate, "certificate validity dates do not parse") }
        self.notBefore = notBefore
        self.notAfter = notAfter
        publicKey = ecPublicKey(of: pointer)
        _ = drainOpenSSLErrors()
        let flags = X509_get_extension_flags(pointer)
        let usage = X509_get_key_usage(pointer)
        keyUsage = usage == UInt32.max ? nil : KeyUsage(rawValue: usage)
        extendedKeyUsage = extendedKeyUsageOIDs(pointer)
        isCertificateAuthority = flags & UInt32(EXFLAG_CA) != 0
        let pathLength = X509_get_pathlen(pointer)
        pathLengthConstraint = pathLength >= 0 ? Int(pathLength) : nil
        isSelfIssued = flags & UInt32(EXFLAG_SS) != 0
        subjectKeyIdentifier = X509_get0_subject_key_id(pointer).flatMap { identifier in
            ASN1_STRING_get0_data(identifier).map {
                Array(UnsafeBufferPointer(start: $0, count: Int(ASN1_STRING_length(identifier))))
            }
        }
        _ = drainOpenSSLErrors()
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.derRepresentation == rhs.derRepresentation }
    public func hash(into hasher: inout Hasher) { hasher.combine(derRepresentation) }

    /// Subject and serial: public facts that tell certificates apart.
    public var description: String { "X509Certificate(\(subject), serial \(serialNumber))" }

    /// The certificate in PEM.
    public var pemRepresentation: String { pemArmor(derRepresentation, label: "CERTIFICATE") }

    /// Builds and checks a path from `self` through `intermediates` to one of `anchors` with OpenSSL's
    /// `X509_verify_cert`, at `time` (seconds since 1970 UTC).
    ///
    /// A convenience over ``validatePath(intermediates:store:at:)`` that builds a store for the one call; a reader
    /// that verifies many documents keeps one ``X509TrustStore``.
    /// - Throws: As ``validatePath(intermediates:store:at:)``.
    public func validatePath(
        intermediates: [X509Certificate] = [],
        anchors: [X509Certificate],
        at time: Int64
    ) throws -> [X509Certificate] {
        try validatePath(intermediates: intermediates, store: try X509TrustStore(anchors: anchors), at: time)
    }

    /// Builds and checks a path from `self` through `intermediates` to one of the store's anchors with OpenSSL's
    /// `X509_verify_cert`, at `time` (seconds since 1970 UTC).
    ///
    /// Signatures, validity periods at `time`, basicConstraints and pathLen of every issuer are OpenSSL's checks;
    /// anchors are trusted as given.
    /// - Returns: The path OpenSSL built, leaf first, anchor last.
    /// - Throws: ``X509Error/Code/untrusted`` naming OpenSSL's reason (`certificate has expired`, `unable to get
    ///   local issuer certificate`, …) and the depth where it failed.
    public func validatePath(
        intermediates: [X509Certificate] = [],
        store: X509TrustStore,
        at time: Int64
    ) throws -> [X509Certificate] {
        guard !store.anchors.isEmpty else { throw X509Error(.untrusted, "no trust anchors configured") }
        // The chain check mutates OpenSSL's caches in the certificates; each is used under its own lock, and
        // intermediates are passed as copies (X509_dup of a parsed certificate, no key decoding).
        var held: [OwnedCertificate] = []
        guard let untrusted = OPENSSL_sk_new_null() else { throw libraryFailure("creating a certificate stack") }
        defer { OPENSSL_sk_free(untrusted) }
        for intermediate in intermediates {
            let owned = try intermediate.handle.copy()
            held.append(owned)
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(owned.pointer)) > 0 else {
                throw libraryFailure("adding an intermediate")
            }
        }
        let known = [self] + intermediates + store.anchors
        return try handle.withPointer { leaf in
            try store.withStore { pointer in
                guard let context = X509_STORE_CTX_new() else { throw libraryFailure("creating an X509_STORE_CTX") }
                defer { X509_STORE_CTX_free(context) }
                try check(X509_STORE_CTX_init(context, pointer, leaf, untrusted), "initialising chain validation")
                X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context), time_t(time))
                guard X509_verify_cert(context) == 1 else {
                    let error = X509_STORE_CTX_get_error(context)
                    let depth = X509_STORE_CTX_get_error_depth(context)
                    let message = String(cString: X509_verify_cert_error_string(Int(error)))
                    _ = drainOpenSSLErrors()
                    throw X509Error(
                        .untrusted,
                        "\(message) (X509_V_ERR \(error)) at depth \(depth)",
                        openSSLCode: Int(error)
                    )
                }
                // The path holds certificates we were given: name them by their DER rather than parse them again.
                var path: [X509Certificate] = []
                if let chain = X509_STORE_CTX_get0_chain(context) {
                    for index in 0..<OPENSSL_sk_num(chain) {
                        guard let raw = OPENSSL_sk_value(chain, index) else { continue }
                        let der = try OwnedCertificate(borrowing: OpaquePointer(raw)).der()
                        if let certificate = known.first(where: { $0.derRepresentation == der }) {
                            path.append(certificate)
                        } else {
                            path.append(try X509Certificate(derRepresentation: der))
                        }
                    }
                }
                return path
            }
        }
    }
}

/// The trust anchors of a reader in one OpenSSL `X509_STORE`, built once: OpenSSL caches each anchor's decoded
/// public key in the store, which OpenSSL 3.0 otherwise decodes again for every chain check.
///
/// `@unchecked Sendable` because it holds a C pointer. Invariant: the store is filled in `init` and never changed
/// afterwards, and every use of it (`withStore`) runs with `lock` held, so one chain check runs at a time per store.
public final class X509TrustStore: @unchecked Sendable {
    public let anchors: [X509Certificate]
    private let pointer: OpaquePointer
    private let lock = Mutex(())

    /// - Throws: ``X509Error/Code/malformedCertificate`` when an anchor does not parse again (it cannot, once made).
    public init(anchors: [X509Certificate]) throws {
        guard let pointer = X509_STORE_new() else { throw libraryFailure("creating an X509_STORE") }
        self.pointer = pointer
        self.anchors = anchors
        for anchor in anchors {
            let owned = try anchor.handle.copy()
            // X509_STORE_add_cert takes its own reference; a duplicate anchor is refused and harmless.
            if X509_STORE_add_cert(pointer, owned.pointer) != 1 { _ = drainOpenSSLErrors() }
        }
    }

    deinit { X509_STORE_free(pointer) }

    func withStore(_ body: (OpaquePointer) throws -> [X509Certificate]) throws -> [X509Certificate] {
        let result: Result<[X509Certificate], any Error> = lock.withLock { _ in
            Result { try body(pointer) }
        }
        return try result.get()
    }
}

/// Why a certificate or path was refused.
public struct X509Error: Error, Hashable, Sendable, ClassifiedError {
    public let code: Code
    public let reason: String
    /// OpenSSL's `X509_V_ERR_*` value for ``Code/untrusted``, else 0.
    public let openSSLCode: Int

    public init(_ code: Code, _ reason: String, openSSLCode: Int = 0) {
        self.code = code
        self.reason = reason
        self.openSSLCode = openSSLCode
    }

    public var kernelCode: ProximaError.Code { .malformedData }
    public var description: String { "X.509 \(code): \(reason)" }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable { case malformedCertificate, untrusted, profileViolation }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// The bytes are not one DER certificate.
        public static let malformedCertificate = Code(.malformedCertificate)
        /// No valid path to a trust anchor at the given time (OpenSSL's reason in the error).
        public static let untrusted = Code(.untrusted)
        /// The path is valid but a certificate breaks the profile (ISO/IEC 18013-5 Annex B: key usage, EKU, …).
        public static let profileViolation = Code(.profileViolation)
    }
}

// MARK: - OpenSSL plumbing

/// OpenSSL's parsed certificate kept with an ``X509Certificate``.
///
/// `@unchecked Sendable` because it holds a C pointer. Invariant: the `X509` is only touched with `lock` held
/// (OpenSSL caches extension data in it lazily), and it is freed when the handle dies.
private final class CertificateHandle: @unchecked Sendable {
    private let certificate: OwnedCertificate
    private let lock = Mutex(())

    init(_ certificate: OwnedCertificate) { self.certificate = certificate }

    func withPointer(_ body: (OpaquePointer) throws -> [X509Certificate]) throws -> [X509Certificate] {
        let result: Result<[X509Certificate], any Error> = lock.withLock { _ in
            Result { try body(certificate.pointer) }
        }
        return try result.get()
    }

    /// An independent copy (`X509_dup`) for OpenSSL to hold in a store or stack.
    func copy() throws -> OwnedCertificate {
        let duplicate: OpaquePointer? = lock.withLock { _ in X509_dup(certificate.pointer) }
        guard let duplicate else { throw libraryFailure("copying a certificate") }
        return OwnedCertificate(duplicate)
    }
}

/// Owns one `X509`. Not `Sendable`: made for one operation.
private final class OwnedCertificate {
    let pointer: OpaquePointer
    private let owns: Bool

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
        owns = true
    }

    init(borrowing pointer: OpaquePointer) {
        self.pointer = pointer
        owns = false
    }

    convenience init(der: [UInt8]) throws {
        let pointer = try der.withNonNullPointer { start, count -> OpaquePointer in
            var cursor: UnsafePointer<UInt8>? = start
            guard let certificate = d2i_X509(nil, &cursor, count) else {
                throw X509Error(.malformedCertificate, "not a DER certificate (\(drainOpenSSLErrors()))")
            }
            guard let cursor, cursor - start == count else {
                X509_free(certificate)
                throw X509Error(.malformedCertificate, "bytes follow the DER certificate")
            }
            return certificate
        }
        self.init(pointer)
    }

    deinit { if owns { X509_free(pointer) } }

    func der() throws -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(pointer, &out)
        guard length > 0, let out else { throw libraryFailure("encoding a certificate") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }
}

private func distinguishedName(_ name: OpaquePointer?) throws -> String {
    guard let name else { return "" }
    let bytes = try readingMemoryBIO("printing a name") { bio in
        X509_NAME_print_ex(bio, name, 0, COpenSSL_XN_FLAG_RFC2253()) >= 0 ? 1 : 0
    }
    return String(decoding: bytes, as: UTF8.self)
}

private func nameEntry(_ name: OpaquePointer?, _ nid: Int32) -> String? {
    guard let name else { return nil }
    let index = X509_NAME_get_index_by_NID(name, nid, -1)
    guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry),
        let start = ASN1_STRING_get0_data(data)
    else { return nil }
    return String(decoding: UnsafeBufferPointer(start: start, count: Int(ASN1_STRING_length(data))), as: UTF8.self)
}

private func serialHex(_ serial: UnsafePointer<ASN1_INTEGER>?) -> String {
    guard let serial, let start = ASN1_STRING_get0_data(serial) else { return "" }
    return UnsafeBufferPointer(start: start, count: Int(ASN1_STRING_length(serial))).hexString
}

private func unixTime(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
    guard let time else { return nil }
    var parts = tm()
    guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
    let civil = CivilTime(
        year: Int(parts.tm_year) + 1900,
        month: Int(parts.tm_mon) + 1,
        day: Int(parts.tm_mday),
        hour: Int(parts.tm_hour),
        minute: Int(parts.tm_min),
        second: Int(parts.tm_sec)
    )
    return civil.unixSeconds
}

/// The subject key of a certificate when it is EC on a supported named curve, read from the SubjectPublicKeyInfo
/// fields directly: `X509_get0_pubkey` goes through OpenSSL 3.0's decoder framework, which costs milliseconds.
private func ecPublicKey(of certificate: OpaquePointer) -> ECPublicKey? {
    guard let spki = X509_get_X509_PUBKEY(certificate) else { return nil }
    var algorithm: OpaquePointer? = nil
    var point: UnsafePointer<UInt8>? = nil
    var length: Int32 = 0
    var parameters: UnsafeMutablePointer<X509_ALGOR>? = nil
    guard X509_PUBKEY_get0_param(&algorithm, &point, &length, &parameters, spki) == 1, let algorithm,
        OBJ_obj2nid(algorithm) == NID_X9_62_id_ecPublicKey, let point, let parameters
    else { return nil }
    var parameterType: Int32 = 0
    var parameterValue: UnsafeRawPointer? = nil
    X509_ALGOR_get0(nil, &parameterType, &parameterValue, parameters)
    guard parameterType == V_ASN1_OBJECT, let parameterValue else { return nil }
    let nid = OBJ_obj2nid(OpaquePointer(parameterValue))
    guard let curve = EllipticCurve.allCases.first(where: { $0.nid == nid }) else { return nil }
    return try? ECPublicKey(
        curve: curve,
        x963Representation: Array(UnsafeBufferPointer(start: point, count: Int(length)))
    )
}

private func extendedKeyUsageOIDs(_ certificate: OpaquePointer) -> [String] {
    guard let raw = X509_get_ext_d2i(certificate, NID_ext_key_usage, nil, nil) else {
        _ = drainOpenSSLErrors()
        return []
    }
    let stack = OpaquePointer(raw)
    defer { EXTENDED_KEY_USAGE_free(stack) }
    var out: [String] = []
    for index in 0..<OPENSSL_sk_num(stack) {
        guard let object = OPENSSL_sk_value(stack, index) else { continue }
        var buffer = [CChar](repeating: 0, count: 128)
        let length = buffer.withUnsafeMutableBufferPointer {
            OBJ_obj2txt($0.baseAddress, 128, OpaquePointer(object), 1)
        }
        guard length > 0, length < 128 else { continue }
        out.append(String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return out
}
