import ProximaCore
import ProximaCrypto

/// What the reader asks one document for: its docType and, per namespace, the element identifiers with the
/// intent to retain each (ISO/IEC 18013-5 §8.3.2.1.2.1, `ItemsRequest`).
package struct DocumentRequest: Hashable, Sendable {
    /// The docType of an ISO mDL.
    package static let mDLDocType = "org.iso.18013.5.1.mDL"
    /// The ISO mDL namespace.
    package static let mDLNamespace = "org.iso.18013.5.1"

    package var docType: String
    /// namespace → element identifier → intent to retain.
    package var elements: [String: [String: Bool]]

    package init(docType: String = DocumentRequest.mDLDocType, elements: [String: [String: Bool]]) {
        self.docType = docType
        self.elements = elements
    }

    /// `ItemsRequest = {"docType": tstr, "nameSpaces": {ns: {element: intentToRetain}}}`, encoded.
    package var itemsRequest: [UInt8] {
        let namespaces = elements.map { namespace, items in
            CBORMapEntry(
                .textString(namespace),
                .map(items.map { CBORMapEntry(.textString($0.key), .boolean($0.value)) })
            )
        }
        return CBOREncoder.encode(["docType": .textString(docType), "nameSpaces": .map(namespaces)])
    }
}

/// The reader's key and certificate chain for reader authentication (§9.1.4), from the manifest.
package struct ReaderAuthenticationKey: Sendable {
    package var privateKey: ECPrivateKey
    /// DER certificates, the reader's first.
    package var certificateChain: [[UInt8]]

    package init(privateKey: ECPrivateKey, certificateChain: [[UInt8]]) {
        self.privateKey = privateKey
        self.certificateChain = certificateChain
    }
}

/// Builds a DeviceRequest (§8.3.2.1.2.1): `{"version": "1.0", "docRequests": [DocRequest]}` with
/// `DocRequest = {"itemsRequest": #6.24(bstr .cbor ItemsRequest), ? "readerAuth": COSE_Sign1}`.
///
/// With a reader key, readerAuth is a COSE_Sign1 with a detached payload,
/// `ReaderAuthenticationBytes = #6.24(bstr .cbor ["ReaderAuthentication", SessionTranscript, ItemsRequestBytes])`,
/// and the chain in the unprotected x5chain.
package func deviceRequest(
    for requests: [DocumentRequest],
    sessionTranscript: [UInt8],
    readerAuthentication: ReaderAuthenticationKey? = nil
) throws -> [UInt8] {
    var docRequests: [CBORValue] = []
    for request in requests {
        let items = request.itemsRequest
        var entries = [CBORMapEntry("itemsRequest", .embedded(encoded: items))]
        if let key = readerAuthentication {
            let payload = readerAuthenticationBytes(sessionTranscript: sessionTranscript, itemsRequest: items)
            let chain: CBORValue =
                key.certificateChain.count == 1
                ? .byteString(key.certificateChain[0]) : .array(key.certificateChain.map { .byteString($0) })
            let signed = try COSESign1.sign(
                payload: payload,
                detached: true,
                key: key.privateKey,
                unprotected: .map([CBORMapEntry(CBORValue(COSEHeader.x5chain), chain)])
            )
            entries.append(CBORMapEntry("readerAuth", signed.value))
        }
        docRequests.append(.map(entries))
    }
    return CBOREncoder.encode(["version": "1.0", "docRequests": .array(docRequests)])
}

/// `#6.24(bstr .cbor ["ReaderAuthentication", SessionTranscript, ItemsRequestBytes])`, with the transcript and
/// the items request embedded exactly as given.
package func readerAuthenticationBytes(sessionTranscript: [UInt8], itemsRequest: [UInt8]) -> [UInt8] {
    var inner: [UInt8] = [0x83]
    CBOREncoder.append("ReaderAuthentication", to: &inner)
    inner += sessionTranscript
    CBOREncoder.append(.embedded(encoded: itemsRequest), to: &inner)
    return CBOREncoder.encode(.embedded(encoded: inner))
}

/// `#6.24(bstr .cbor ["DeviceAuthentication", SessionTranscript, DocType, DeviceNameSpacesBytes])` (§9.1.3.4),
/// with the transcript and DeviceNameSpacesBytes exactly as given.
package func deviceAuthenticationBytes(
    sessionTranscript: [UInt8],
    docType: String,
    deviceNameSpacesBytes: ArraySlice<UInt8>
) -> [UInt8] {
    var inner: [UInt8] = [0x84]
    CBOREncoder.append("DeviceAuthentication", to: &inner)
    inner += sessionTranscript
    CBOREncoder.append(.textString(docType), to: &inner)
    inner += deviceNameSpacesBytes
    return CBOREncoder.encode(.embedded(encoded: inner))
}
