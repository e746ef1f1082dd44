import ProximaCore
import ProximaCrypto

/// A Verified Issuer Certificate Authority List (ISO/IEC 18013-5 Annex C, C.1.7; what AAMVA's Digital Trust
/// Service publishes): a COSE_Sign1 whose payload is the VICAL CBOR and whose `x5chain` (label 33) carries the
/// VICAL signer's certificate, leaf first.
///
/// ```cddl
/// VICAL = { "version": tstr, "vicalProvider": tstr, "date": tdate, ? "vicalIssueID": uint,
///           ? "nextUpdate": tdate, "certificateInfos": [* CertificateInfo], ? "extensions": {...}, * tstr => any }
/// CertificateInfo = { "certificate": bstr, "serialNumber": biguint, "ski": bstr, "docType": [+ tstr],
///                     ? "certificateProfile": [+ tstr], ? "issuingAuthority": tstr, ? "issuingCountry": tstr,
///                     ? "stateOrProvinceName": tstr, ? "issuer": bstr, ? "subject": bstr, ? "notBefore": tdate,
///                     ? "notAfter": tdate, ? "extensions": {...}, * tstr => any }
/// ```
///
/// How the VICAL itself is trusted (Proxima's rule; ISO leaves it to the reader): its signer certificate must
/// chain, by `X509_verify_cert` at load time, to one of the configured VICAL trust anchors (the manifest's
/// `vicalTrustAnchors`), and must allow digitalSignature when it has a keyUsage; the COSE signature must verify
/// with that certificate's key. Then `nextUpdate` (with the clock skew) must not have passed, and every entry must
/// be well formed: its certificate parses, its `serialNumber` and `ski` are the certificate's own, its docType
/// list is non-empty text.
package struct VICAL: Sendable {
    /// One IACA of the list and the docTypes it may issue.
    package struct Entry: Sendable {
        package let certificate: X509Certificate
        package let docTypes: [String]
        package let issuingAuthority: String?
        package let issuingCountry: String?
    }

    package let version: String
    package let provider: String
    package let date: CivilTime
    package let issueID: UInt64?
    package let nextUpdate: CivilTime?
    package let entries: [Entry]
    /// The VICAL signer certificate (the x5chain leaf) that verified.
    package let signer: X509Certificate

    /// The largest VICAL read (AAMVA's lists a few hundred IACAs in well under a megabyte).
    package static let maximumSize = 8 << 20
    /// The most entries taken.
    package static let maximumEntries = 10_000
    static let limits = CBORDecoder.Limits(maximumDepth: 16, maximumItemCount: 1 << 20, maximumInputSize: maximumSize)

    /// Parses and verifies a signed VICAL.
    ///
    /// The checks, in order, each failing with its own ``VICALError/Code``: the COSE_Sign1 structure and its
    /// x5chain (`malformed`); the signature with the signer's key (`signatureInvalid`); the signer's chain to
    /// `signerAnchors` at `now` (`signerUntrusted`, or `expired` when OpenSSL says a certificate of it is outside
    /// its validity); the VICAL structure (`malformed`); `nextUpdate` and `date` against `now` with the skew
    /// (`expired`); each entry (`malformedEntry`, with its index).
    ///
    /// - Parameters:
    ///   - encoded: The file's bytes: a COSE_Sign1, tagged (18) or not.
    ///   - signerAnchors: The certificates the signer must chain to.
    ///   - now: Seconds since 1970 UTC.
    ///   - clockSkewSeconds: Tolerance on `date` and `nextUpdate`.
    /// - Throws: ``VICALError``.
    package static func verify(
        _ encoded: [UInt8],
        signerAnchors: X509TrustStore,
        now: Int64,
        clockSkewSeconds: Int64 = 300
    ) throws(VICALError) -> VICAL {
        guard encoded.count <= maximumSize else {
            throw VICALError(.malformed, "the VICAL is \(encoded.count) bytes; at most \(maximumSize) are read")
        }
        let message: COSESign1
        do {
            message = try COSESign1(try CBORDecoder.decode(encoded, limits: limits))
        } catch {
            throw VICALError(.malformed, "the VICAL is not a COSE_Sign1: \(error)")
        }
        let chain: [X509Certificate]
        do {
            chain = try message.certificateChain().map { try X509Certificate(derRepresentation: $0) }
        } catch {
            throw VICALError(.malformed, "the VICAL's x5chain does not parse: \(error)")
        }
        guard let signer = chain.first else {
            throw VICALError(.malformed, "the VICAL's COSE_Sign1 has no x5chain (label 33) naming its signer")
        }
        guard let signerKey = signer.publicKey else {
            throw VICALError(.signerUntrusted, "the VICAL signer \(signer.subject) has no EC P-256/384/521 key")
        }
        guard let payload = message.payload else { throw VICALError(.malformed, "the VICAL's payload is detached") }
        do {
            try message.verify(with: signerKey)
        } catch {
            throw VICALError(.signatureInvalid, "the VICAL does not verify with its signer \(signer.subject): \(error)")
        }
        try checkSigner(signer, intermediates: Array(chain.dropFirst()), anchors: signerAnchors, now: now)
        return try contents(ofPayload: payload, signer: signer, now: now, clockSkewSeconds: clockSkewSeconds)
    }

    /// The VICAL of a payload whose signature and signer were checked: its structure, `date` and `nextUpdate`
    /// against `now`, and every entry. Total on any bytes (the fuzz target calls it directly).
    /// - Throws: ``VICALError`` `malformed`, `expired`, `malformedEntry`.
    package static func contents(
        ofPayload payload: [UInt8],
        signer: X509Certificate,
        now: Int64,
        clockSkewSeconds: Int64 = 300
    ) throws(VICALError) -> VICAL {
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(payload, limits: limits)
        } catch {
            throw VICALError(.malformed, "the VICAL payload is not CBOR: \(error)")
        }
        guard case .map = value else { throw VICALError(.malformed, "the VICAL payload is not a map") }
        guard let version = value["version"]?.textValue, version.hasPrefix("1.") else {
            throw VICALError(.malformed, "the VICAL version is absent or not 1.x")
        }
        guard let provider = value["vicalProvider"]?.textValue else {
            throw VICALError(.malformed, "the VICAL has no vicalProvider text")
        }
        guard let date = value["date"].flatMap(dateTime) else {
            throw VICALError(.malformed, "the VICAL has no date (tdate)")
        }
        var issueID: UInt64?
        if let field = value["vicalIssueID"] {
            guard case .unsigned(let number) = field else {
                throw VICALError(.malformed, "the VICAL's vicalIssueID is not an unsigned integer")
            }
            issueID = number
        }
        var nextUpdate: CivilTime?
        if let field = value["nextUpdate"] {
            guard let time = dateTime(field) else { throw VICALError(.malformed, "the VICAL's nextUpdate is no tdate") }
            nextUpdate = time
        }
        guard date.unixSeconds - clockSkewSeconds <= now else {
            throw VICALError(.expired, "the VICAL is dated \(date.rfc3339), in the future (is the clock right?)")
        }
        if let nextUpdate, nextUpdate.unixSeconds + clockSkewSeconds < now {
            throw VICALError(
                .expired,
                "the VICAL's nextUpdate \(nextUpdate.rfc3339) has passed; fetch the provider's current VICAL"
            )
        }
        guard let infos = value["certificateInfos"]?.arrayValue else {
            throw VICALError(.malformed, "the VICAL has no certificateInfos array")
        }
        guard infos.count <= maximumEntries else {
            throw VICALError(.malformed, "the VICAL lists \(infos.count) certificates; at most \(maximumEntries)")
        }
        var entries: [Entry] = []
        entries.reserveCapacity(infos.count)
        for (index, info) in infos.enumerated() {
            entries.append(try entry(info, index: index))
        }
        return VICAL(
            version: version,
            provider: provider,
            date: date,
            issueID: issueID,
            nextUpdate: nextUpdate,
            entries: entries,
            signer: signer
        )
    }

    private static func checkSigner(
        _ signer: X509Certificate,
        intermediates: [X509Certificate],
        anchors: X509TrustStore,
        now: Int64
    ) throws(VICALError) {
        do {
            _ = try signer.validatePath(intermediates: intermediates, store: anchors, at: now)
        } catch let error as X509Error where [9, 10].contains(error.openSSLCode) {
            // X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_CERT_HAS_EXPIRED.
            throw VICALError(.expired, "the VICAL signer's chain is outside its validity: \(error.reason)")
        } catch {
            throw VICALError(
                .signerUntrusted,
                "the VICAL signer \(signer.subject) does not chain to a vicalTrustAnchors certificate: \(error)"
            )
        }
        if let usage = signer.keyUsage, !usage.contains(.digitalSignature) {
            throw VICALError(.signerUntrusted, "the VICAL signer certificate lacks keyUsage digitalSignature")
        }
    }

    private static func entry(_ info: CBORValue, index: Int) throws(VICALError) -> Entry {
        func fail(_ reason: String) -> VICALError {
            VICALError(.malformedEntry, "certificateInfos[\(index)]: \(reason)", entryIndex: index)
        }
        guard case .map = info else { throw fail("not a map") }
        guard let der = info["certificate"]?.bytesValue else { throw fail("no certificate bstr") }
        let certificate: X509Certificate
        do {
            certificate = try X509Certificate(derRepresentation: der)
        } catch {
            throw fail("the certificate does not parse: \(error)")
        }
        guard let serial = info["serialNumber"].flatMap(unsignedBytes) else {
            throw fail("no serialNumber (biguint)")
        }
        guard trimmed(serial) == trimmed(certificate.serialNumberBytes) else {
            throw fail("serialNumber differs from the certificate's (\(certificate.serialNumber))")
        }
        guard let ski = info["ski"]?.bytesValue else { throw fail("no ski bstr") }
        guard let ownSKI = certificate.subjectKeyIdentifier, ownSKI == ski else {
            throw fail("ski differs from the certificate's subjectKeyIdentifier")
        }
        guard let docTypeValues = info["docType"]?.arrayValue, !docTypeValues.isEmpty else {
            throw fail("no docType list (at least one tstr)")
        }
        var docTypes: [String] = []
        for item in docTypeValues {
            guard let docType = item.textValue, !docType.isEmpty else { throw fail("a docType is not text") }
            docTypes.append(docType)
        }
        if let profiles = info["certificateProfile"] {
            guard let items = profiles.arrayValue, !items.isEmpty, items.allSatisfy({ $0.textValue != nil }) else {
                throw fail("certificateProfile is not a list of tstr")
            }
        }
        for key in ["issuingAuthority", "issuingCountry", "stateOrProvinceName"] {
            if let field = info[key], field.textValue == nil { throw fail("\(key) is not text") }
        }
        for key in ["issuer", "subject"] {
            if let field = info[key], field.bytesValue == nil { throw fail("\(key) is not a bstr") }
        }
        for key in ["notBefore", "notAfter"] {
            if let field = info[key], dateTime(field) == nil { throw fail("\(key) is not a tdate") }
        }
        if let field = info["extensions"], field.mapValue == nil { throw fail("extensions is not a map") }
        return Entry(
            certificate: certificate,
            docTypes: docTypes,
            issuingAuthority: info["issuingAuthority"]?.textValue,
            issuingCountry: info["issuingCountry"]?.textValue
        )
    }

    /// A `tdate` (tag 0), or the same text untagged (some published VICALs omit the tag).
    private static func dateTime(_ value: CBORValue) -> CivilTime? {
        if let time = value.dateTimeValue { return time }
        guard let text = value.textValue else { return nil }
        return CBORValue.tagged(CBORValue.dateTimeTag, .textString(text)).dateTimeValue
    }

    /// A `biguint` (tag 2 over a bstr) or a plain unsigned integer, as big-endian bytes.
    private static func unsignedBytes(_ value: CBORValue) -> [UInt8]? {
        switch value {
        case .tagged(2, .byteString(let bytes)): return bytes
        case .unsigned(let number):
            return (0..<8).reversed().map { UInt8(truncatingIfNeeded: number >> (8 * UInt64($0))) }
        default: return nil
        }
    }

    private static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> { bytes.drop { $0 == 0 } }
}

/// Why a VICAL was refused. A struct with a stable ``code`` and a human ``reason``; for an entry, its index in
/// certificateInfos. The manifest wraps it in `ProximaError.invalidManifest` naming the `vical` key's JSON path.
package struct VICALError: Error, Hashable, Sendable, CustomStringConvertible {
    package let code: Code
    package let reason: String
    package let entryIndex: Int?

    package init(_ code: Code, _ reason: String, entryIndex: Int? = nil) {
        self.code = code
        self.reason = reason
        self.entryIndex = entryIndex
    }

    package var description: String { "VICAL \(code): \(reason)" }
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code && lhs.entryIndex == rhs.entryIndex }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }

    package enum Code: String, Hashable, Sendable, CustomStringConvertible {
        /// Not a COSE_Sign1 with an x5chain and a VICAL payload of the Annex C structure.
        case malformed
        /// The COSE signature does not verify with the x5chain leaf's key (the list was altered).
        case signatureInvalid
        /// The signer certificate does not chain to a configured VICAL trust anchor (or may not sign).
        case signerUntrusted
        /// nextUpdate has passed, the VICAL is dated in the future, or its signer's chain is outside its validity.
        case expired
        /// One certificateInfos entry is malformed (``VICALError/entryIndex`` says which).
        case malformedEntry

        package var description: String { rawValue }
    }
}
