import ProximaCore
import ProximaCrypto

/// How the holder proved possession of the device key.
package enum DeviceAuthenticationMethod: String, Hashable, Sendable {
    case mac, signature
}

/// A document whose every returned element verified: issuer signature and chain, digests, validity, docType and
/// device authentication. The element values are identity data: this type stays `package` and the API decides
/// what reaches the app (`description` prints identifiers, never values).
package struct VerifiedDocument: Sendable, CustomStringConvertible {
    package let docType: String
    /// The subject of the IACA the document signer chains to.
    package let issuer: String
    /// The subject of the document signer certificate.
    package let documentSigner: String
    /// namespace → element identifier → value, only elements that were requested and verified.
    package let elements: [String: [String: CBORValue]]
    package let deviceAuthentication: DeviceAuthenticationMethod
    package let signed: CivilTime
    package let validFrom: CivilTime
    package let validUntil: CivilTime
    /// namespace → element identifier → error code the holder gave instead of a value (§8.3.2.1.2.2).
    package let elementErrors: [String: [String: Int]]

    package var description: String {
        let names = elements.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.keys.sorted())" }
        return "VerifiedDocument(\(docType), issuer \(issuer), \(deviceAuthentication), \(names))"
    }
}

/// Verifies a DeviceResponse (ISO/IEC 18013-5 §9.3) for one requested document.
///
/// The checks, in order, each failing with its own ``MobileDocumentError/Code``: structure and version; status 0;
/// a document of the requested docType (else `documentNotReturned`, with documentErrors); the issuerAuth x5chain
/// to a trust anchor at `now` with the Annex B profile; the issuer signature; the MSO's structure, digest
/// algorithm, docType, validity (with the clock skew) and `signed` within the DS certificate's validity; every
/// returned element's digest over its IssuerSignedItemBytes exactly as received; issuing_country against the DS
/// certificate; device authentication by deviceMac (EMacKey) or deviceSignature over DeviceAuthenticationBytes.
///
/// - Parameters:
///   - response: The decrypted DeviceResponse bytes.
///   - request: What was asked; only its elements are returned.
///   - sessionTranscript: The encoded SessionTranscript of the session.
///   - macKey: EMacKey for the MSO's device key (``MdocSession/deviceMacKey(deviceKey:)``).
///   - trust: The anchors and clock skew.
///   - now: Seconds since 1970 UTC.
/// - Throws: ``MobileDocumentError``.
package func verifyDeviceResponse(
    _ response: [UInt8],
    request: DocumentRequest,
    sessionTranscript: [UInt8],
    macKey: (ECPublicKey) throws -> [UInt8],
    trust: MdocTrust,
    now: Int64
) throws -> VerifiedDocument {
    let limits = CBORDecoder.Limits(maximumDepth: 32, maximumItemCount: 100_000, maximumInputSize: 4 << 20)
    let value: CBORValue
    do {
        value = try CBORDecoder.decode(response, limits: limits)
    } catch {
        throw MobileDocumentError.decoding(.malformedResponse, "DeviceResponse", error)
    }
    guard let version = value["version"]?.textValue, version.hasPrefix("1.") else {
        throw MobileDocumentError(.malformedResponse, "DeviceResponse version is absent or not 1.x")
    }
    guard let status = value["status"]?.intValue else {
        throw MobileDocumentError(.malformedResponse, "DeviceResponse has no status")
    }
    guard status == 0 else {
        let meaning =
            switch status {
            case 10: "general error"
            case 11: "CBOR decoding error"
            case 12: "CBOR validation error"
            default: "unknown status"
            }
        throw MobileDocumentError(.responseStatus, "DeviceResponse status \(status) (\(meaning))")
    }
    let documents = value["documents"]?.arrayValue ?? []
    guard let index = documents.firstIndex(where: { $0["docType"]?.textValue == request.docType }) else {
        let errors = (value["documentErrors"]?.arrayValue ?? []).flatMap { $0.mapValue ?? [] }
        let listed = errors.map { "\($0.key.textValue ?? "?"): \($0.value.intValue.map(String.init) ?? "?")" }
        throw MobileDocumentError(
            .documentNotReturned,
            "no \(request.docType) document in the DeviceResponse"
                + (listed.isEmpty ? "" : "; documentErrors \(listed.joined(separator: ", "))")
        )
    }
    let document = documents[index]
    let documentPath: [CBORDecoder.PathComponent] = [.key("documents"), .index(index)]

    // Issuer authentication.
    guard let issuerSigned = document["issuerSigned"], let issuerAuthValue = issuerSigned["issuerAuth"] else {
        throw MobileDocumentError(.malformedResponse, "document has no issuerSigned.issuerAuth")
    }
    let issuerAuth: COSESign1
    do {
        issuerAuth = try COSESign1(issuerAuthValue)
    } catch {
        throw MobileDocumentError(.malformedResponse, "issuerAuth is not a COSE_Sign1", underlying: error)
    }
    let chain: [X509Certificate]
    do {
        chain = try issuerAuth.certificateChain().map { try trust.certificates.certificate($0) }
    } catch {
        throw MobileDocumentError(.issuerCertificateMissing, "issuerAuth x5chain does not parse", underlying: error)
    }
    guard let documentSigner = chain.first, let signerKey = documentSigner.publicKey else {
        throw MobileDocumentError(.issuerCertificateMissing, "issuerAuth has no x5chain with an EC document signer")
    }
    let iaca: X509Certificate
    do {
        iaca = try trust.validateDocumentSigner(documentSigner, intermediates: Array(chain.dropFirst()), at: now)
    } catch let error as X509Error where error.code == .profileViolation {
        throw MobileDocumentError(.issuerCertificateProfile, error.reason, underlying: error)
    } catch {
        throw MobileDocumentError(
            .issuerUntrusted,
            "document signer \(documentSigner.subject) does not chain to a configured IACA",
            underlying: error
        )
    }
    do {
        try issuerAuth.verify(with: signerKey)
    } catch {
        throw MobileDocumentError(.issuerSignatureInvalid, "issuerAuth does not verify", underlying: error)
    }

    // The MSO.
    let mso: CBORValue
    do {
        guard let payload = issuerAuth.payload else {
            throw MobileDocumentError(.malformedMSO, "issuerAuth payload is detached")
        }
        mso = try CBORDecoder.decodeEmbedded(payload[...], limits: limits)
    } catch let error as MobileDocumentError {
        throw error
    } catch {
        throw MobileDocumentError.decoding(.malformedMSO, "MobileSecurityObjectBytes", error)
    }
    guard let digestName = mso["digestAlgorithm"]?.textValue else {
        throw MobileDocumentError(.malformedMSO, "MSO has no digestAlgorithm")
    }
    let digest: DigestAlgorithm
    switch digestName {
    case "SHA-256": digest = .sha256
    case "SHA-384": digest = .sha384
    case "SHA-512": digest = .sha512
    default: throw MobileDocumentError(.unsupportedDigestAlgorithm, "MSO digestAlgorithm \(digestName)")
    }
    guard let msoDocType = mso["docType"]?.textValue, let docType = document["docType"]?.textValue else {
        throw MobileDocumentError(.malformedMSO, "MSO has no docType")
    }
    guard msoDocType == docType, docType == request.docType else {
        throw MobileDocumentError(
            .docTypeMismatch,
            "document \(docType), MSO \(msoDocType), requested \(request.docType)"
        )
    }
    if let listed = trust.docTypes(issuedBy: iaca), !listed.contains(docType) {
        throw MobileDocumentError(
            .docTypeNotListedForIACA,
            "the VICAL lists IACA \(iaca.subject) for \(listed.sorted().joined(separator: ", ")), not \(docType)"
        )
    }
    guard let validity = mso["validityInfo"], let signed = validity["signed"]?.dateTimeValue,
        let validFrom = validity["validFrom"]?.dateTimeValue, let validUntil = validity["validUntil"]?.dateTimeValue
    else { throw MobileDocumentError(.malformedMSO, "MSO validityInfo lacks signed, validFrom or validUntil as tdate") }
    guard validFrom.unixSeconds - trust.clockSkewSeconds <= now else {
        throw MobileDocumentError(.msoNotYetValid, "MSO validFrom \(validFrom.rfc3339) is in the future")
    }
    guard now <= validUntil.unixSeconds + trust.clockSkewSeconds else {
        throw MobileDocumentError(.msoExpired, "MSO validUntil \(validUntil.rfc3339) has passed")
    }
    guard documentSigner.notBefore <= signed.unixSeconds, signed.unixSeconds <= documentSigner.notAfter else {
        throw MobileDocumentError(
            .signedOutsideCertificateValidity,
            "MSO signed \(signed.rfc3339) outside the document signer certificate's validity"
        )
    }
    guard let valueDigests = mso["valueDigests"], case .map = valueDigests else {
        throw MobileDocumentError(.malformedMSO, "MSO has no valueDigests map")
    }

    // Issuer-signed elements, each digest over the bytes as received.
    var elements: [String: [String: CBORValue]] = [:]
    let namespaces = issuerSigned["nameSpaces"]?.mapValue ?? []
    // Slices of `response` from here on: the items are found, decoded and hashed where they lie.
    let namespacesBytes: ArraySlice<UInt8>
    do {
        namespacesBytes =
            try CBORDecoder.encodedItem(
                in: response,
                at: documentPath + [.key("issuerSigned"), .key("nameSpaces")],
                limits: limits
            ) ?? []
    } catch {
        throw MobileDocumentError.decoding(.malformedResponse, "issuerSigned.nameSpaces", error)
    }
    for entry in namespaces {
        guard let namespace = entry.key.textValue else {
            throw MobileDocumentError(.malformedResponse, "issuerSigned namespace name is not a tstr")
        }
        guard let digests = valueDigests[namespace], case .map = digests else {
            throw MobileDocumentError(.digestMissing, "MSO has no valueDigests for namespace \(namespace)")
        }
        let items: [ArraySlice<UInt8>]
        do {
            guard let array = try CBORDecoder.encodedItem(in: namespacesBytes, at: [.key(entry.key)], limits: limits),
                let found = try CBORDecoder.encodedElements(ofArray: array, limits: limits)
            else { throw MobileDocumentError(.malformedResponse, "namespace \(namespace) is not an array") }
            items = found
        } catch let error as MobileDocumentError {
            throw error
        } catch {
            throw MobileDocumentError.decoding(.malformedResponse, "namespace \(namespace)", error)
        }
        var seen = Set<Int>()
        let wanted = request.elements[namespace] ?? [:]
        for itemBytes in items {
            let item: CBORValue
            do {
                item = try CBORDecoder.decodeEmbedded(itemBytes, limits: limits)
            } catch {
                throw MobileDocumentError.decoding(.malformedResponse, "an IssuerSignedItem of \(namespace)", error)
            }
            guard let digestID = item["digestID"]?.intValue, let identifier = item["elementIdentifier"]?.textValue,
                let elementValue = item["elementValue"], item["random"]?.bytesValue != nil
            else { throw MobileDocumentError(.malformedResponse, "an IssuerSignedItem of \(namespace) lacks a field") }
            guard seen.insert(digestID).inserted else {
                throw MobileDocumentError(.digestMissing, "digestID \(digestID) appears twice in \(namespace)")
            }
            guard let expected = digests[digestID]?.bytesValue else {
                throw MobileDocumentError(.digestMissing, "\(namespace)/\(identifier): digestID not in the MSO")
            }
            let actual: [UInt8]
            do {
                actual = try digest.hash(Array(itemBytes))
            } catch {
                throw MobileDocumentError(
                    .digestMismatch,
                    "\(namespace)/\(identifier): hashing failed",
                    underlying: error
                )
            }
            guard actual == expected else {
                throw MobileDocumentError(.digestMismatch, "\(namespace)/\(identifier): digest differs from the MSO")
            }
            if namespace == DocumentRequest.mDLNamespace, identifier == "issuing_country",
                elementValue.textValue != documentSigner.subjectCountry
            {
                throw MobileDocumentError(
                    .issuingCountryMismatch,
                    "issuing_country differs from the document signer's C \(documentSigner.subjectCountry ?? "-")"
                )
            }
            if wanted[identifier] != nil { elements[namespace, default: [:]][identifier] = elementValue }
        }
    }

    // Device authentication.
    guard let deviceSigned = document["deviceSigned"], let deviceAuth = deviceSigned["deviceAuth"] else {
        throw MobileDocumentError(.deviceAuthenticationMissing, "document has no deviceSigned.deviceAuth")
    }
    let deviceKey: ECPublicKey
    do {
        guard let key = mso["deviceKeyInfo"]?["deviceKey"] else {
            throw MobileDocumentError(.deviceKeyInvalid, "MSO has no deviceKeyInfo.deviceKey")
        }
        deviceKey = try COSEKey.publicKey(from: key)
    } catch let error as MobileDocumentError {
        throw error
    } catch {
        throw MobileDocumentError(.deviceKeyInvalid, "MSO deviceKey is not a usable COSE_Key", underlying: error)
    }
    let deviceNamespaces: ArraySlice<UInt8>
    do {
        guard
            let found = try CBORDecoder.encodedItem(
                in: response,
                at: documentPath + [.key("deviceSigned"), .key("nameSpaces")],
                limits: limits
            ), deviceSigned["nameSpaces"]?.embeddedBytes != nil
        else {
            throw MobileDocumentError(.malformedResponse, "deviceSigned.nameSpaces is not DeviceNameSpacesBytes")
        }
        deviceNamespaces = found
    } catch let error as MobileDocumentError {
        throw error
    } catch {
        throw MobileDocumentError.decoding(.malformedResponse, "deviceSigned.nameSpaces", error)
    }
    let authenticated = deviceAuthenticationBytes(
        sessionTranscript: sessionTranscript,
        docType: docType,
        deviceNameSpacesBytes: deviceNamespaces
    )
    let method: DeviceAuthenticationMethod
    switch (deviceAuth["deviceMac"], deviceAuth["deviceSignature"]) {
    case (let mac?, nil):
        method = .mac
        do {
            let key = try macKey(deviceKey)
            try COSEMac0(mac).verify(key: key, detachedPayload: authenticated)
        } catch {
            throw MobileDocumentError(.deviceMacInvalid, "deviceMac does not verify under EMacKey", underlying: error)
        }
    case (nil, let signature?):
        method = .signature
        do {
            try COSESign1(signature).verify(with: deviceKey, detachedPayload: authenticated)
        } catch {
            throw MobileDocumentError(
                .deviceSignatureInvalid,
                "deviceSignature does not verify with the MSO device key",
                underlying: error
            )
        }
    default:
        throw MobileDocumentError(
            .deviceAuthenticationMissing,
            "deviceAuth must hold exactly one of deviceMac and deviceSignature"
        )
    }

    var elementErrors: [String: [String: Int]] = [:]
    for namespace in document["errors"]?.mapValue ?? [] {
        guard let name = namespace.key.textValue else { continue }
        for element in namespace.value.mapValue ?? [] {
            guard let identifier = element.key.textValue, let code = element.value.intValue else { continue }
            elementErrors[name, default: [:]][identifier] = code
        }
    }
    return VerifiedDocument(
        docType: docType,
        issuer: iaca.subject,
        documentSigner: documentSigner.subject,
        elements: elements,
        deviceAuthentication: method,
        signed: signed,
        validFrom: validFrom,
        validUntil: validUntil,
        elementErrors: elementErrors
    )
}
