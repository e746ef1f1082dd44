// Offline data authentication on the virtual EMV card: the certificates a profile's `oda` object asks for (made
// when the profile is loaded, with the TEST keys of Config/keys/emv-oda-test-private.json) and the Signed Dynamic
// Application Data (9F4B) computed for each transaction: fDDA in the GPO answer of a qVSDC application, CDA in the
// GENERATE AC answer of an M/Chip application when the terminal sets P1 bit 5. Formats: EMV 4.4 Book 2 Tables 6
// (issuer certificate), 14 (ICC certificate), 17 (dynamic signature) and 19 (CDA ICC Dynamic Data).
//
// TEST KEYS ONLY: the private keys are published in this repository.

internal import ProximaCore
package import ProximaCrypto
internal import ProximaSystem

/// The card's side of offline data authentication: its ICC private key and the data it signs with.
package struct CardAuthentication: Hashable, Sendable {
    /// TEST ICC private key.
    package var iccKey: RSA.PrivateKey
    /// Card Authentication Related Data (`9F69`) for fDDA, when the application has one.
    package var cardAuthenticationData: [UInt8]?
    /// Flip a byte of every SDAD after signing (the "bad signature" test card).
    package var corruptSignature: Bool

    package init(iccKey: RSA.PrivateKey, cardAuthenticationData: [UInt8]?, corruptSignature: Bool) {
        self.iccKey = iccKey
        self.cardAuthenticationData = cardAuthenticationData
        self.corruptSignature = corruptSignature
    }

    /// Table 17: `6A 05 01 LDD <ICC Dynamic Data> BB… <SHA-1> BC`, signed with the ICC key; the hash also covers
    /// `terminalDynamicData`.
    package func signedDynamicData(iccDynamicData: [UInt8], terminalDynamicData: [UInt8]) -> [UInt8]? {
        let size = iccKey.publicKey.byteCount
        guard iccDynamicData.count <= size - 25 else { return nil }
        var body: [UInt8] = [0x05, 0x01, UInt8(iccDynamicData.count)] + iccDynamicData
        body += [UInt8](repeating: 0xBB, count: size - 22 - body.count)
        guard let hash = try? SHA1.hash(body + terminalDynamicData),
            var signature = try? iccKey.sign([0x6A] + body + hash + [0xBC])
        else { return nil }
        if corruptSignature { signature[signature.count / 2] ^= 0x01 }
        return signature
    }

    /// The values of `tags` in DOL-related `data` built by `dol` (absent tags give nothing).
    static func values(of tags: [TLVTag], in data: [UInt8], dol: [UInt8]) -> [TLVTag: [UInt8]] {
        guard let list = try? DataObjectList(bytes: dol) else { return [:] }
        var found: [TLVTag: [UInt8]] = [:]
        var offset = 0
        for entry in list.entries {
            guard offset + entry.length <= data.count else { break }
            if tags.contains(entry.tag) { found[entry.tag] = Array(data[offset..<(offset + entry.length)]) }
            offset += entry.length
        }
        return found
    }

    /// fDDA's terminal dynamic data, from the PDOL-related data the terminal sent: `9F37`, then for 9F69 version
    /// `01` `9F02`, `5F2A` and `9F69`.
    func fastDDATerminalData(pdolData: [UInt8], pdol: [UInt8]) -> [UInt8] {
        let values = Self.values(of: [0x9F37, 0x9F02, 0x5F2A], in: pdolData, dol: pdol)
        let un = values[0x9F37] ?? []
        guard let data = cardAuthenticationData, data.first == 0x01 else { return un }
        return un + (values[0x9F02] ?? []) + (values[0x5F2A] ?? []) + data
    }
}

/// Certificates of a profile's `oda` object (EMV Book 2 Tables 6 and 14), signed at load time.
enum CertificateMaker {
    /// Issuer Public Key Certificate (`90`) and Remainder (`92`) for `issuer`, signed by `authority`.
    static func issuerCertificate(
        issuer: RSA.PublicKey,
        authority: RSA.PrivateKey,
        pan: String,
        expiry: [UInt8],
        serial: [UInt8]
    ) throws -> (certificate: [UInt8], remainder: [UInt8]) {
        let size = authority.publicKey.byteCount
        let room = size - 36
        let identifier = pack(String(pan.prefix(6)) + "FF")
        let leftmost = Array(issuer.modulus.prefix(room))
        let remainder = issuer.modulus.count > room ? Array(issuer.modulus.dropFirst(room)) : []
        var body: [UInt8] = [0x02] + identifier + expiry + serial
        body += [0x01, 0x01, UInt8(issuer.modulus.count), UInt8(issuer.exponent.count)] + leftmost
        body += [UInt8](repeating: 0xBB, count: size - 22 - body.count)
        let hash = try SHA1.hash(body + remainder + issuer.exponent)
        return (try authority.sign([0x6A] + body + hash + [0xBC]), remainder)
    }

    /// ICC Public Key Certificate (`9F46`) and Remainder (`9F48`), signed by the issuer over `staticData` too.
    static func iccCertificate(
        icc: RSA.PublicKey,
        issuer: RSA.PrivateKey,
        pan: String,
        expiry: [UInt8],
        serial: [UInt8],
        staticData: [UInt8]
    ) throws -> (certificate: [UInt8], remainder: [UInt8]) {
        let size = issuer.publicKey.byteCount
        let room = size - 42
        var application = pack(pan)
        application += [UInt8](repeating: 0xFF, count: max(0, 10 - application.count))
        let leftmost = Array(icc.modulus.prefix(room))
        let remainder = icc.modulus.count > room ? Array(icc.modulus.dropFirst(room)) : []
        var body: [UInt8] = [0x04] + application + expiry + serial
        body += [0x01, 0x01, UInt8(icc.modulus.count), UInt8(icc.exponent.count)] + leftmost
        body += [UInt8](repeating: 0xBB, count: size - 22 - body.count)
        let hash = try SHA1.hash(body + remainder + icc.exponent + staticData)
        return (try issuer.sign([0x6A] + body + hash + [0xBC]), remainder)
    }

    /// Digits (and `F`) two per byte, F-padded.
    static func pack(_ text: String) -> [UInt8] {
        var nibbles = text.compactMap { $0.hexDigitValue.map(UInt8.init) }
        if nibbles.count % 2 == 1 { nibbles.append(0x0F) }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }
}

/// A profile application's `oda` object:
///
/// ```json
/// "oda": { "keys": "../keys/emv-oda-test-private.json", "certificationAuthorityIndex": "E1",
///          "issuerKey": "issuer-1152", "iccKey": "icc-1024",
///          "issuerCertificateExpiry": "1229", "iccCertificateExpiry": "1229",
///          "signApplicationInterchangeProfile": true, "cardAuthenticationData": "01A1B2C3D40000",
///          "corruptSignature": false }
/// ```
///
/// `keys` (resolved against the profile's folder) names the TEST key file; the CA key is
/// `certificationAuthorities["<RID of the AID>/<index>"]`. Expiries are MMYY. With `signApplicationInterchangeProfile`
/// the card's SDA Tag List (`9F4A`) is `82` and the ICC certificate signs the AIP too. `cardAuthenticationData` is
/// `9F69` (fDDA version 01 when its first byte is `01`). `corruptSignature` makes every SDAD fail to verify.
/// Records list the tags `8F`, `90`, `92`, `9F32`, `9F46`, `9F47`, `9F48`, `9F4A`, `9F69` where the card keeps them;
/// the certificates (`90`, `92`, `9F46`, `9F48`) cannot sit in a record flagged for ODA.
struct ProfileAuthentication {
    var knownValues: [TLVTag: [UInt8]]
    var signsApplicationInterchangeProfile: Bool
    var card: CardAuthentication
    private var authority: RSA.PrivateKey
    private var issuer: RSA.PrivateKey
    private var issuerExpiry: [UInt8]
    private var iccExpiry: [UInt8]

    init(_ json: JSONValue, at path: String, aid: [UInt8], source: String) throws {
        var object = try StrictObject(json, at: path, errorCode: .malformedData)
        let file = try object.string("keys")
        let directory = source.lastIndex(of: "/").map { String(source[..<$0]) } ?? "."
        let keysPath = file.hasPrefix("/") ? file : directory + "/" + file
        let keys = try Self.loadKeys(keysPath, at: object.path(of: "keys"))
        let index = try CardProfiles.hex(&object, "certificationAuthorityIndex", count: 1...1)
        let authorityName = Array(aid.prefix(5)).hexString + "/" + index.hexString
        func key(_ group: String, _ name: String, _ member: String) throws -> RSA.PrivateKey {
            guard let entry = keys[group]?[name] else {
                throw object.fail(member, "\(keysPath) has no \(group) key \"\(name)\"")
            }
            guard let modulus = entry["modulus"]?.hexBytes, let exponent = entry["exponent"]?.hexBytes,
                let privateExponent = entry["privateExponent"]?.hexBytes
            else { throw object.fail(member, "\(group) key \"\(name)\" lacks modulus, exponent or privateExponent") }
            do {
                return try RSA.PrivateKey(modulus: modulus, publicExponent: exponent, privateExponent: privateExponent)
            } catch let error as ProximaError {
                throw object.fail(member, error.reason)
            }
        }
        authority = try key("certificationAuthorities", authorityName, "certificationAuthorityIndex")
        issuer = try key("issuers", try object.string("issuerKey"), "issuerKey")
        let icc = try key("iccs", try object.string("iccKey"), "iccKey")
        issuerExpiry = try CardProfiles.hex(&object, "issuerCertificateExpiry", count: 2...2)
        iccExpiry = try CardProfiles.hex(&object, "iccCertificateExpiry", count: 2...2)
        signsApplicationInterchangeProfile = try object.bool("signApplicationInterchangeProfile", default: false)
        let cardData = try CardProfiles.optionalHex(&object, "cardAuthenticationData", count: 1...16)
        card = CardAuthentication(
            iccKey: icc,
            cardAuthenticationData: cardData,
            corruptSignature: try object.bool("corruptSignature", default: false)
        )
        try object.finish()
        knownValues = [0x8F: index, 0x9F32: issuer.publicKey.exponent, 0x9F47: icc.publicKey.exponent]
        if signsApplicationInterchangeProfile { knownValues[0x9F4A] = [0x82] }
        if let cardData { knownValues[0x9F69] = cardData }
    }

    /// `90`, `92`, `9F46`, `9F48` for `pan` and the static data the ODA records make.
    func certificates(pan: String, staticData: [UInt8], at path: String) throws -> [TLVTag: [UInt8]] {
        do {
            let issuerCertificate = try CertificateMaker.issuerCertificate(
                issuer: issuer.publicKey,
                authority: authority,
                pan: pan,
                expiry: issuerExpiry,
                serial: [0x00, 0x00, 0x01]
            )
            let iccCertificate = try CertificateMaker.iccCertificate(
                icc: card.iccKey.publicKey,
                issuer: issuer,
                pan: pan,
                expiry: iccExpiry,
                serial: [0x00, 0x00, 0x02],
                staticData: staticData
            )
            var values: [TLVTag: [UInt8]] = [0x90: issuerCertificate.certificate, 0x9F46: iccCertificate.certificate]
            if !issuerCertificate.remainder.isEmpty { values[0x92] = issuerCertificate.remainder }
            if !iccCertificate.remainder.isEmpty { values[0x9F48] = iccCertificate.remainder }
            return values
        } catch {
            throw ProximaError(.malformedData, "\(path): cannot make the certificates: \(error)")
        }
    }

    /// The TEST key file: `{ "<group>": { "<name>": { "modulus", "exponent", "privateExponent" } } }`.
    private static func loadKeys(_ path: String, at jsonPath: String) throws -> [String: [String: [String: String]]] {
        let bytes: [UInt8]
        do {
            bytes = try SystemFile.read(path, limit: 1 << 20)
        } catch {
            throw ProximaError(.malformedData, "\(jsonPath): cannot read \(path): \(error.reason)")
        }
        let json = try JSONValue.parse(bytes)
        guard case .object(let groups) = json else {
            throw ProximaError(.malformedData, "\(jsonPath): \(path) is not a JSON object")
        }
        var result: [String: [String: [String: String]]] = [:]
        for (group, value) in groups {
            guard case .object(let entries) = value else { continue }
            for (name, entry) in entries {
                guard case .object(let members) = entry else { continue }
                var fields: [String: String] = [:]
                for (key, field) in members { if case .string(let text) = field { fields[key] = text } }
                result[group, default: [:]][name] = fields
            }
        }
        return result
    }
}

extension String {
    fileprivate var hexBytes: [UInt8]? { [UInt8](hex: self) }
}
