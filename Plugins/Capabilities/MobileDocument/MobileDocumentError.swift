import ProximaCore

/// Why an mDL read failed: each check of ISO/IEC 18013-5 has its own code, so the reason a document was refused
/// survives to the app and the lane ("MSO expired", not "verification failed").
///
/// Reasons name the check and where (document, namespace, element identifier) but never an element's value.
/// Equality compares the code only.
public struct MobileDocumentError: Error, Hashable, Sendable, ClassifiedError {
    public let code: Code
    public let reason: String
    /// The error of a lower layer (``CBORError``, `COSEError`, `X509Error`, `ProximaError`), when there is one.
    public let underlying: (any Error)?

    public init(_ code: Code, _ reason: String, underlying: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.underlying = underlying
    }

    public var kernelCode: ProximaError.Code {
        switch code {
        case .notAnMdoc, .unsupportedEngagement: .unsupported
        case .holderSilent: .cardTimeout
        default: .malformedData
        }
    }

    public var description: String {
        let cause = underlying.map { " (\($0))" } ?? ""
        return "mDL \(code): \(reason)\(cause)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A stable error code; compare codes, never reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        // Engagement and transport.
        /// The card answered SELECT of the NDEF or mdoc application with "not found": no (unlocked) mdoc.
        public static let notAnMdoc = Code("notAnMdoc")
        /// The NDEF engagement or the Handover Select does not parse or lacks the DeviceEngagement record.
        public static let malformedEngagement = Code("malformedEngagement")
        /// The DeviceEngagement offers nothing this reader speaks (version, cipher suite, curve, NFC transfer).
        public static let unsupportedEngagement = Code("unsupportedEngagement")
        /// An APDU of the NFC data transfer was answered with an error status.
        public static let transferFailed = Code("transferFailed")
        /// The holder stopped answering after engagement.
        public static let holderSilent = Code("holderSilent")

        // Session.
        /// SessionEstablishment or SessionData is not the structure ISO/IEC 18013-5 §9.1.1.4 defines.
        public static let malformedSessionMessage = Code("malformedSessionMessage")
        /// A SessionData did not decrypt under SKDevice with the expected counter (altered or replayed).
        public static let sessionDecryptionFailed = Code("sessionDecryptionFailed")
        /// The holder ended the session (status 20) or reported a session error (10, 11) instead of data.
        public static let sessionTerminated = Code("sessionTerminated")

        // DeviceResponse structure.
        /// The DeviceResponse is not the structure §8.3.2.1.2.2 defines (or its version is not 1.x).
        public static let malformedResponse = Code("malformedResponse")
        /// The DeviceResponse status is not 0 (OK).
        public static let responseStatus = Code("responseStatus")
        /// No document of the requested docType came back (documentErrors says why, if it does).
        public static let documentNotReturned = Code("documentNotReturned")

        // Issuer authentication.
        /// issuerAuth has no x5chain, or its certificates do not parse.
        public static let issuerCertificateMissing = Code("issuerCertificateMissing")
        /// The document signer certificate does not chain to a configured IACA at the verification time.
        public static let issuerUntrusted = Code("issuerUntrusted")
        /// The chain is valid but breaks the Annex B profile (EKU, key usage, country).
        public static let issuerCertificateProfile = Code("issuerCertificateProfile")
        /// The issuerAuth COSE_Sign1 does not verify with the document signer key.
        public static let issuerSignatureInvalid = Code("issuerSignatureInvalid")
        /// The MSO is not the structure §9.1.2.4 defines.
        public static let malformedMSO = Code("malformedMSO")
        /// The MSO's digestAlgorithm is not SHA-256, SHA-384 or SHA-512.
        public static let unsupportedDigestAlgorithm = Code("unsupportedDigestAlgorithm")
        /// A returned element's digest differs from the MSO's.
        public static let digestMismatch = Code("digestMismatch")
        /// A returned element's digestID is not in the MSO, or appears twice.
        public static let digestMissing = Code("digestMissing")
        /// The document's docType, the MSO's docType and the requested docType differ.
        public static let docTypeMismatch = Code("docTypeMismatch")
        /// The IACA the document signer chains to came from the VICAL, whose entry does not list this docType.
        public static let docTypeNotListedForIACA = Code("docTypeNotListedForIACA")
        /// validityInfo.validFrom is after now (plus the clock skew).
        public static let msoNotYetValid = Code("msoNotYetValid")
        /// validityInfo.validUntil is before now (minus the clock skew).
        public static let msoExpired = Code("msoExpired")
        /// validityInfo.signed lies outside the document signer certificate's validity.
        public static let signedOutsideCertificateValidity = Code("signedOutsideCertificateValidity")
        /// issuing_country differs from the document signer certificate's C.
        public static let issuingCountryMismatch = Code("issuingCountryMismatch")

        // Device authentication.
        /// deviceAuth holds neither deviceSignature nor deviceMac (or both).
        public static let deviceAuthenticationMissing = Code("deviceAuthenticationMissing")
        /// The MSO's deviceKey is not a usable COSE_Key.
        public static let deviceKeyInvalid = Code("deviceKeyInvalid")
        /// deviceMac does not verify under EMacKey (or uses another algorithm than HMAC 256/256).
        public static let deviceMacInvalid = Code("deviceMacInvalid")
        /// deviceSignature does not verify with the MSO's deviceKey.
        public static let deviceSignatureInvalid = Code("deviceSignatureInvalid")
    }
}

extension MobileDocumentError {
    /// Wraps a decoding error of the bytes `what` under `code`.
    static func decoding(_ code: Code, _ what: String, _ error: any Error) -> MobileDocumentError {
        MobileDocumentError(code, "\(what) does not decode", underlying: error)
    }
}
