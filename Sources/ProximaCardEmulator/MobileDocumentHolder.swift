internal import Foundation
public import ProximaCore
public import ProximaCrypto

/// A virtual mDL holder (ISO/IEC 18013-5, the mdoc side of NFC engagement and NFC data transfer) with switches
/// that break one check each, so a reader can be shown to refuse each failure for its own reason.
///
/// Engagement is static handover from an NFC Forum Type 4 Tag (NDEF application `D2760000850101`, CC `E103`,
/// NDEF file `E104` holding a Handover Select with an `iso.org:18013:nfc` carrier and the DeviceEngagement).
/// Transfer is SELECT `A0000002480400`, then ENVELOPE with DO'53' (chained with CLA `10`), answered through
/// `61xx` and GET RESPONSE. Each tap makes a fresh ephemeral device key; the MSO, issuer signature and device
/// authentication are made for the request received, only the requested elements are returned.
public struct MobileDocumentHolder: VirtualCard {
    /// The issued document: elements, issuer and device keys, validity.
    public struct Credential: Sendable {
        public struct Element: Sendable {
            public var namespace: String
            public var identifier: String
            public var value: CBORValue
            public init(namespace: String = "org.iso.18013.5.1", _ identifier: String, _ value: CBORValue) {
                self.namespace = namespace
                self.identifier = identifier
                self.value = value
            }
        }

        public var docType: String
        public var elements: [Element]
        /// The document signer certificate (DER) that goes in the issuerAuth x5chain.
        public var documentSignerCertificate: [UInt8]
        public var documentSignerKey: ECPrivateKey
        /// A document signer of an IACA nobody trusts, for ``Tamper/unknownIACA``.
        public var rogueDocumentSigner: (certificate: [UInt8], key: ECPrivateKey)?
        /// The static device key whose public half the MSO carries.
        public var deviceKey: ECPrivateKey
        public var signed: CivilTime
        public var validFrom: CivilTime
        public var validUntil: CivilTime
        /// Device authentication by MAC (EMacKey) when `true`, by signature otherwise.
        public var authenticatesByMAC: Bool

        public init(
            docType: String = "org.iso.18013.5.1.mDL",
            elements: [Element],
            documentSignerCertificate: [UInt8],
            documentSignerKey: ECPrivateKey,
            rogueDocumentSigner: (certificate: [UInt8], key: ECPrivateKey)? = nil,
            deviceKey: ECPrivateKey,
            signed: CivilTime,
            validFrom: CivilTime,
            validUntil: CivilTime,
            authenticatesByMAC: Bool = true
        ) {
            self.docType = docType
            self.elements = elements
            self.documentSignerCertificate = documentSignerCertificate
            self.documentSignerKey = documentSignerKey
            self.rogueDocumentSigner = rogueDocumentSigner
            self.deviceKey = deviceKey
            self.signed = signed
            self.validFrom = validFrom
            self.validUntil = validUntil
            self.authenticatesByMAC = authenticatesByMAC
        }

        /// A TEST mDL issued with the TEST keys of `Config/keys` (`mdl-ds-test*.pem`, `mdl-rogue-ds-test*.pem`,
        /// `mdl-device-test-private.pem`), signed 2026-01-01 and valid for a year, for "Erika Mustermann" (a
        /// specimen name), born 1990-01-01, with a 4-byte stand-in portrait.
        /// - Parameter directory: The `Config/keys` folder.
        /// - Throws: When a key file is missing or does not parse.
        public static func test(keysIn directory: String) throws -> Credential {
            func text(_ name: String) throws -> String {
                try String(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(name), encoding: .utf8)
            }
            let certificate = try X509Certificate.certificates(pemRepresentation: try text("mdl-ds-test.pem"))[0]
            let rogue = try X509Certificate.certificates(pemRepresentation: try text("mdl-rogue-ds-test.pem"))[0]
            let ns = "org.iso.18013.5.1"
            return Credential(
                elements: [
                    Element(namespace: ns, "family_name", "Mustermann"),
                    Element(namespace: ns, "given_name", "Erika"),
                    Element(namespace: ns, "birth_date", .fullDate(year: 1990, month: 1, day: 1)),
                    Element(namespace: ns, "age_over_21", true),
                    Element(namespace: ns, "issuing_country", "UT"),
                    Element(namespace: ns, "document_number", "TEST-0001"),
                    Element(namespace: ns, "portrait", .byteString([0xFF, 0xD8, 0xFF, 0xD9])),
                ],
                documentSignerCertificate: certificate.derRepresentation,
                documentSignerKey: try ECPrivateKey(pemRepresentation: try text("mdl-ds-test-private.pem")),
                rogueDocumentSigner: (
                    rogue.derRepresentation,
                    try ECPrivateKey(pemRepresentation: try text("mdl-rogue-ds-test-private.pem"))
                ),
                deviceKey: try ECPrivateKey(pemRepresentation: try text("mdl-device-test-private.pem")),
                signed: CivilTime(year: 2026, month: 1, day: 1),
                validFrom: CivilTime(year: 2026, month: 1, day: 1),
                validUntil: CivilTime(year: 2027, month: 1, day: 1)
            )
        }
    }

    /// One failure each: the reader must refuse the read with the matching check.
    public struct Tamper: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The first returned element's value differs from what the MSO digests.
        public static let tamperedElement = Tamper(rawValue: 1 << 0)
        /// validUntil equals signed: expired at any later time.
        public static let expiredMSO = Tamper(rawValue: 1 << 1)
        /// Signed by the rogue document signer (an IACA the reader does not trust).
        public static let unknownIACA = Tamper(rawValue: 1 << 2)
        /// The MSO names another docType than the document.
        public static let wrongDocType = Tamper(rawValue: 1 << 3)
        /// A bit of the deviceMac tag flipped.
        public static let badDeviceMAC = Tamper(rawValue: 1 << 4)
        /// Device authentication by signature, with a bit of the signature flipped.
        public static let badDeviceSignature = Tamper(rawValue: 1 << 5)
        /// Answers nothing after the engagement (SELECT of the transfer application and everything after).
        public static let muteAfterEngagement = Tamper(rawValue: 1 << 6)
    }

    public var name = "mDL holder"
    public let atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01]
    public let ats: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02]
    public let uid: [UInt8] = [0x08, 0x12, 0x34, 0x56]
    public let technology: CardTechnology = .iso14443A

    public let credential: Credential
    public let tamper: Tamper

    /// What the holder received in a DeviceRequest: each element asked with its intent to retain, and whether the
    /// request carried readerAuth (ISO/IEC 18013-5 §8.3.2.1.2.1), for tests that check what the reader sent.
    public struct ReceivedRequest: Sendable, Hashable {
        public var docType: String
        /// namespace → element identifier → intentToRetain.
        public var elements: [String: [String: Bool]]
        public var hasReaderAuthentication: Bool
    }

    /// Called with every DeviceRequest's first DocRequest, as received.
    public var onRequest: (@Sendable (ReceivedRequest) -> Void)?

    private enum Selected { case none, ndefApplication, capabilityContainer, ndefFile, transfer }
    private var selected = Selected.none
    private var ndefFile: [UInt8] = []
    private var engagementBytes: [UInt8] = []
    private var handoverSelect: [UInt8] = []
    private var ephemeralKey: ECPrivateKey?
    private var incoming: [UInt8] = []
    private var outgoing: [UInt8] = []
    private var session: HolderSession?
    /// Whether the reader has read the whole Handover Select.
    private var engaged = false

    public init(credential: Credential, tamper: Tamper = []) {
        self.credential = credential
        self.tamper = tamper
    }

    private enum Status {
        static let ok: [UInt8] = [0x90, 0x00]
        static let wrongLength: [UInt8] = [0x67, 0x00]
        static let notFound: [UInt8] = [0x6A, 0x82]
        static let wrongParameters: [UInt8] = [0x6B, 0x00]
        static let conditions: [UInt8] = [0x69, 0x85]
        static let noInstruction: [UInt8] = [0x6D, 0x00]
        static let noPrecise: [UInt8] = [0x6F, 0x00]
    }

    public mutating func respond(to command: [UInt8]) -> [UInt8] {
        guard let apdu = try? CommandAPDU(bytes: command) else { return Status.wrongLength }
        if tamper.contains(.muteAfterEngagement), engaged { return [] }
        switch (apdu.cla & 0xEF, apdu.ins) {
        case (0x00, 0xA4): return select(apdu)
        case (0x00, 0xB0): return readBinary(apdu)
        case (0x00, 0xC3): return envelope(apdu)
        case (0x00, 0xC0): return getResponse(apdu)
        default: return Status.noInstruction
        }
    }

    // MARK: - Engagement

    private mutating func select(_ apdu: CommandAPDU) -> [UInt8] {
        switch (apdu.p1, apdu.data) {
        case (0x04, [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]):
            guard (try? prepareEngagement()) != nil else { return Status.noPrecise }
            selected = .ndefApplication
        case (0x00, [0xE1, 0x03]) where selected != .none && selected != .transfer:
            selected = .capabilityContainer
        case (0x00, [0xE1, 0x04]) where selected != .none && selected != .transfer:
            selected = .ndefFile
        case (0x04, [0xA0, 0x00, 0x00, 0x02, 0x48, 0x04, 0x00]):
            guard ephemeralKey != nil else { return Status.conditions }
            selected = .transfer
        default:
            return Status.notFound
        }
        return Status.ok
    }

    private mutating func prepareEngagement() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        ephemeralKey = key
        let engagement: CBORValue = [
            0: "1.0", 1: [1, .embedded(COSEKey.value(of: key.publicKey))],
        ]
        engagementBytes = CBOREncoder.encode(engagement)
        // Hs 1.5 with one alternative carrier: NFC (carrier data reference "nfc", auxiliary data "mdoc").
        let alternativeCarrier = NDEFBytes.record(
            tnf: 1,
            type: Array("ac".utf8),
            payload: [0x01, 0x03] + Array("nfc".utf8) + [0x01, 0x04] + Array("mdoc".utf8),
            first: true,
            last: true
        )
        handoverSelect =
            NDEFBytes.record(
                tnf: 1,
                type: Array("Hs".utf8),
                payload: [0x15] + alternativeCarrier,
                first: true,
                last: false
            )
            + NDEFBytes.record(
                tnf: 4,
                type: Array("iso.org:18013:nfc".utf8),
                identifier: Array("nfc".utf8),
                payload: [0x01, 0x03, 0x01, 0xFF, 0xFF, 0x04, 0x02, 0x01, 0x00, 0x00],
                first: false,
                last: false
            )
            + NDEFBytes.record(
                tnf: 4,
                type: Array("iso.org:18013:deviceengagement".utf8),
                identifier: Array("mdoc".utf8),
                payload: engagementBytes,
                first: false,
                last: true
            )
        ndefFile = [UInt8(handoverSelect.count >> 8), UInt8(handoverSelect.count & 0xFF)] + handoverSelect
    }

    private mutating func readBinary(_ apdu: CommandAPDU) -> [UInt8] {
        let file: [UInt8]
        switch selected {
        case .capabilityContainer:
            file = [0x00, 0x0F, 0x20, 0x7F, 0xFF, 0x7F, 0xFF, 0x04, 0x06, 0xE1, 0x04, 0x7F, 0xFF, 0x00, 0xFF]
        case .ndefFile: file = ndefFile
        default: return Status.conditions
        }
        let offset = Int(apdu.p1 & 0x7F) << 8 | Int(apdu.p2)
        guard offset <= file.count else { return Status.wrongParameters }
        let count = min(apdu.expectedLength ?? 256, file.count - offset)
        if selected == .ndefFile, offset >= 2, offset + count == file.count { engaged = true }
        return Array(file[offset..<(offset + count)]) + Status.ok
    }

    // MARK: - Transfer

    private mutating func envelope(_ apdu: CommandAPDU) -> [UInt8] {
        guard selected == .transfer else { return Status.conditions }
        incoming += apdu.data
        guard incoming.count <= 1 << 20 else {
            incoming = []
            return Status.wrongLength
        }
        if apdu.cla & 0x10 != 0 { return Status.ok }
        let message = incoming
        incoming = []
        guard let request = Self.unwrap(message), let answer = try? handle(request) else { return Status.noPrecise }
        outgoing = Self.wrap(answer)
        return sendOutgoing(limit: apdu.expectedLength ?? 256)
    }

    private mutating func getResponse(_ apdu: CommandAPDU) -> [UInt8] {
        guard !outgoing.isEmpty else { return Status.conditions }
        return sendOutgoing(limit: apdu.expectedLength ?? 256)
    }

    private mutating func sendOutgoing(limit: Int) -> [UInt8] {
        let count = min(limit, outgoing.count)
        let chunk = Array(outgoing[..<count])
        outgoing.removeFirst(count)
        if outgoing.isEmpty { return chunk + Status.ok }
        return chunk + [0x61, outgoing.count >= 256 ? 0x00 : UInt8(outgoing.count)]
    }

    /// Answers one SessionEstablishment or SessionData.
    private mutating func handle(_ message: [UInt8]) throws -> [UInt8] {
        let value = try CBORDecoder.decode(message)
        if var session {
            guard let data = value["data"]?.bytesValue else {
                self.session = nil
                return CBOREncoder.encode(["status": 20])
            }
            let request = try session.open(data)
            let response = try session.seal(try deviceResponse(for: request, session: session))
            self.session = session
            return CBOREncoder.encode(["data": .byteString(response)])
        }
        guard let ephemeralKey, let readerKeyBytes = value["eReaderKey"]?.embeddedBytes,
            let data = value["data"]?.bytesValue
        else { throw ProximaError(.malformedData, "not a SessionEstablishment") }
        let readerKey = try COSEKey.publicKey(from: try CBORDecoder.decode(readerKeyBytes))
        var transcript: [UInt8] = [0x83]
        CBOREncoder.append(.embedded(encoded: engagementBytes), to: &transcript)
        CBOREncoder.append(.embedded(encoded: readerKeyBytes), to: &transcript)
        CBOREncoder.append([.byteString(handoverSelect), .null], to: &transcript)
        var session = try HolderSession(ephemeralKey: ephemeralKey, readerKey: readerKey, transcript: transcript)
        let request = try session.open(data)
        let response = try session.seal(try deviceResponse(for: request, session: session))
        self.session = session
        return CBOREncoder.encode(["data": .byteString(response)])
    }

    /// The DeviceResponse to a DeviceRequest: the requested elements of the credential, issuer-signed and
    /// device-authenticated for this session.
    private func deviceResponse(for requestBytes: [UInt8], session: HolderSession) throws -> [UInt8] {
        let request = try CBORDecoder.decode(requestBytes)
        guard let items = try request["docRequests"]?.arrayValue?.first?["itemsRequest"]?.decodeEmbedded(),
            let docType = items["docType"]?.textValue
        else { throw ProximaError(.malformedData, "DeviceRequest without an itemsRequest") }
        if let onRequest {
            var asked: [String: [String: Bool]] = [:]
            for namespace in items["nameSpaces"]?.mapValue ?? [] {
                for element in namespace.value.mapValue ?? [] {
                    asked[namespace.key.textValue ?? "", default: [:]][element.key.textValue ?? ""] =
                        element.value.boolValue ?? false
                }
            }
            let readerAuth = request["docRequests"]?.arrayValue?.first?["readerAuth"] != nil
            onRequest(ReceivedRequest(docType: docType, elements: asked, hasReaderAuthentication: readerAuth))
        }
        guard docType == credential.docType else {
            return CBOREncoder.encode(["version": "1.0", "documentErrors": [[.textString(docType): 0]], "status": 0])
        }
        var wanted: Set<String> = []
        for namespace in items["nameSpaces"]?.mapValue ?? [] {
            for element in namespace.value.mapValue ?? [] {
                wanted.insert("\(namespace.key.textValue ?? "")/\(element.key.textValue ?? "")")
            }
        }
        // Every element is digested in the MSO; only the requested ones are returned.
        var digests: [String: [CBORMapEntry]] = [:]
        var returned: [String: [CBORValue]] = [:]
        var tampered = !tamper.contains(.tamperedElement)
        for (index, element) in credential.elements.enumerated() {
            let random = (try? SecureRandom.bytes(count: 16)) ?? [UInt8](repeating: UInt8(index), count: 16)
            let item: CBORValue = [
                "digestID": CBORValue(index), "random": .byteString(random),
                "elementIdentifier": .textString(element.identifier), "elementValue": element.value,
            ]
            let itemBytes = CBORValue.embedded(item)
            digests[element.namespace, default: []].append(
                CBORMapEntry(CBORValue(index), .byteString(try SHA256.hash(itemBytes.encoded)))
            )
            guard wanted.contains("\(element.namespace)/\(element.identifier)") else { continue }
            if !tampered {
                tampered = true
                let altered: CBORValue = [
                    "digestID": CBORValue(index), "random": .byteString(random),
                    "elementIdentifier": .textString(element.identifier), "elementValue": "tampered",
                ]
                returned[element.namespace, default: []].append(.embedded(altered))
            } else {
                returned[element.namespace, default: []].append(itemBytes)
            }
        }
        let signer =
            tamper.contains(.unknownIACA)
            ? (credential.rogueDocumentSigner
                ?? (credential.documentSignerCertificate, credential.documentSignerKey))
            : (credential.documentSignerCertificate, credential.documentSignerKey)
        let mso: CBORValue = [
            "version": "1.0",
            "digestAlgorithm": "SHA-256",
            "valueDigests": .map(digests.map { CBORMapEntry(.textString($0.key), .map($0.value)) }),
            "deviceKeyInfo": ["deviceKey": COSEKey.value(of: credential.deviceKey.publicKey)],
            "docType": .textString(tamper.contains(.wrongDocType) ? credential.docType + ".other" : credential.docType),
            "validityInfo": [
                "signed": .dateTime(credential.signed),
                "validFrom": .dateTime(credential.validFrom),
                "validUntil": .dateTime(tamper.contains(.expiredMSO) ? credential.signed : credential.validUntil),
            ],
        ]
        let issuerAuth = try COSESign1.sign(
            payload: CBORValue.embedded(mso).encoded,
            key: signer.1,
            unprotected: [33: .byteString(signer.0)]
        )
        let deviceNameSpaces = CBORValue.embedded(.map([]))
        var authenticated: [UInt8] = [0x84]
        CBOREncoder.append("DeviceAuthentication", to: &authenticated)
        authenticated += session.transcript
        CBOREncoder.append(.textString(credential.docType), to: &authenticated)
        CBOREncoder.append(deviceNameSpaces, to: &authenticated)
        let deviceAuthenticationBytes = CBORValue.embedded(encoded: authenticated).encoded
        let deviceAuth: CBORValue
        if credential.authenticatesByMAC && !tamper.contains(.badDeviceSignature) {
            let key = try session.macKey(deviceKey: credential.deviceKey)
            let mac = try COSEMac0.authenticate(payload: deviceAuthenticationBytes, detached: true, key: key)
            var parts = mac.value.arrayValue ?? []
            if tamper.contains(.badDeviceMAC) {
                var tag = mac.macTag
                tag[0] ^= 0x01
                parts[3] = .byteString(tag)
            }
            deviceAuth = ["deviceMac": .array(parts)]
        } else {
            let signature = try COSESign1.sign(
                payload: deviceAuthenticationBytes,
                detached: true,
                key: credential.deviceKey
            )
            var parts = signature.value.arrayValue ?? []
            if tamper.contains(.badDeviceSignature) {
                var bytes = signature.signature
                bytes[0] ^= 0x01
                parts[3] = .byteString(bytes)
            }
            deviceAuth = ["deviceSignature": .array(parts)]
        }
        let document: CBORValue = [
            "docType": .textString(credential.docType),
            "issuerSigned": [
                "nameSpaces": .map(returned.map { CBORMapEntry(.textString($0.key), .array($0.value)) }),
                "issuerAuth": issuerAuth.value,
            ],
            "deviceSigned": ["nameSpaces": deviceNameSpaces, "deviceAuth": deviceAuth],
        ]
        return CBOREncoder.encode(["version": "1.0", "documents": [document], "status": 0])
    }

    private static func wrap(_ message: [UInt8]) -> [UInt8] {
        let count = message.count
        let length: [UInt8] =
            switch count {
            case 0..<0x80: [UInt8(count)]
            case 0x80...0xFF: [0x81, UInt8(count)]
            case 0x100...0xFFFF: [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
            default:
                [
                    0x83, UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8),
                    UInt8(count & 0xFF),
                ]
            }
        return [0x53] + length + message
    }

    private static func unwrap(_ data: [UInt8]) -> [UInt8]? {
        guard data.count >= 2, data[0] == 0x53 else { return nil }
        var length = Int(data[1])
        var start = 2
        if data[1] >= 0x80 {
            let width = Int(data[1] & 0x7F)
            guard (1...3).contains(width), data.count >= 2 + width else { return nil }
            length = data[2..<(2 + width)].reduce(0) { $0 << 8 | Int($1) }
            start = 2 + width
        }
        guard data.count - start == length else { return nil }
        return Array(data[start...])
    }
}

/// The holder's half of the session (ISO/IEC 18013-5 §9.1.1.5): it decrypts with SKReader and encrypts with
/// SKDevice, each direction with its own counter from 1.
private struct HolderSession: Sendable {
    let transcript: [UInt8]
    let transcriptBytes: [UInt8]
    let readerKey: ECPublicKey
    private let skReader: [UInt8]
    private let skDevice: [UInt8]
    private var readerCounter: UInt32 = 1
    private var deviceCounter: UInt32 = 1

    init(ephemeralKey: ECPrivateKey, readerKey: ECPublicKey, transcript: [UInt8]) throws {
        self.transcript = transcript
        self.readerKey = readerKey
        transcriptBytes = CBORValue.embedded(encoded: transcript).encoded
        let salt = try SHA256.hash(transcriptBytes)
        let z = try ephemeralKey.sharedSecret(with: readerKey)
        skReader = try HKDF.deriveKey(
            inputKeyMaterial: z,
            salt: salt,
            info: Array("SKReader".utf8),
            outputByteCount: 32
        )
        skDevice = try HKDF.deriveKey(
            inputKeyMaterial: z,
            salt: salt,
            info: Array("SKDevice".utf8),
            outputByteCount: 32
        )
    }

    private static func iv(_ identifier: UInt8, _ counter: UInt32) -> [UInt8] {
        [0, 0, 0, 0, 0, 0, 0, identifier]
            + [
                UInt8(counter >> 24), UInt8(truncatingIfNeeded: counter >> 16), UInt8(truncatingIfNeeded: counter >> 8),
                UInt8(truncatingIfNeeded: counter),
            ]
    }

    mutating func open(_ data: [UInt8]) throws -> [UInt8] {
        let plaintext = try AES.GCM.open(data, key: skReader, iv: Self.iv(0, readerCounter))
        readerCounter &+= 1
        return plaintext
    }

    mutating func seal(_ plaintext: [UInt8]) throws -> [UInt8] {
        let sealed = try AES.GCM.seal(plaintext, key: skDevice, iv: Self.iv(1, deviceCounter))
        deviceCounter &+= 1
        return sealed
    }

    func macKey(deviceKey: ECPrivateKey) throws -> [UInt8] {
        let z = try deviceKey.sharedSecret(with: readerKey)
        return try HKDF.deriveKey(
            inputKeyMaterial: z,
            salt: try SHA256.hash(transcriptBytes),
            info: Array("EMacKey".utf8),
            outputByteCount: 32
        )
    }
}

/// NDEF record encoding for the holder's Handover Select (NFC Forum NDEF 1.0 §3.2, short records).
private enum NDEFBytes {
    static func record(
        tnf: UInt8,
        type: [UInt8],
        identifier: [UInt8] = [],
        payload: [UInt8],
        first: Bool,
        last: Bool
    ) -> [UInt8] {
        var header = tnf | 0x10
        if first { header |= 0x80 }
        if last { header |= 0x40 }
        if !identifier.isEmpty { header |= 0x08 }
        var out = [header, UInt8(type.count), UInt8(payload.count)]
        if !identifier.isEmpty { out.append(UInt8(identifier.count)) }
        return out + type + identifier + payload
    }
}
