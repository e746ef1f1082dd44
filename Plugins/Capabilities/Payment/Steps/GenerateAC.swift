internal import EMVCommon
package import ProximaCore

/// The type of application cryptogram, from bits 8–7 of the Cryptogram Information Data (`9F27`,
/// EMV Book 3 §6.5.5.4 Table 14).
package enum CryptogramType: String, Hashable, Sendable, CustomStringConvertible {
    /// Application Authentication Cryptogram (`00`): the card declines.
    case aac = "AAC"
    /// Transaction Certificate (`01`, `40`): the card approves offline.
    case tc = "TC"
    /// Authorisation Request Cryptogram (`10`, `80`): the card asks to go online.
    case arqc = "ARQC"

    /// The type in a CID byte; `nil` for bits `11` (RFU).
    package init?(cryptogramInformationData cid: UInt8) {
        switch cid & 0xC0 {
        case 0x00: self = .aac
        case 0x40: self = .tc
        case 0x80: self = .arqc
        default: return nil
        }
    }

    /// The order of what a card may answer (Book 3 §6.5.5.2): to a request for a TC any of the three, to an ARQC
    /// an ARQC or an AAC, to an AAC only an AAC.
    var rank: Int {
        switch self {
        case .aac: 0
        case .arqc: 1
        case .tc: 2
        }
    }

    /// The P1 reference control bits of GENERATE AC that ask for this type (EMV Book 3 §6.5.5.2 Table 12).
    var referenceControl: UInt8 {
        switch self {
        case .aac: 0x00
        case .tc: 0x40
        case .arqc: 0x80
        }
    }

    package var description: String { rawValue }
}

/// The answer to GENERATE AC (EMV Book 3 §6.5.5.4): Cryptogram Information Data, ATC, the application
/// cryptogram and Issuer Application Data, in format 1 (`80`) or format 2 (`77`).
package struct GenerateACResponse: Hashable, Sendable {
    /// Cryptogram Information Data (`9F27`).
    package var cryptogramInformationData: UInt8
    /// The cryptogram type, bits 8–7 of the CID.
    package var cryptogramType: CryptogramType
    /// Application Transaction Counter (`9F36`, 2 bytes).
    package var applicationTransactionCounter: [UInt8]
    /// Application Cryptogram (`9F26`, 8 bytes); empty when a CDA answer carries it only inside `9F4B`.
    package var applicationCryptogram: [UInt8]
    /// Issuer Application Data (`9F10`, up to 32 bytes); empty when absent.
    package var issuerApplicationData: [UInt8]
    /// Format 2: every primitive data object of the template (`9F4B` SDAD for CDA, …). Empty for format 1.
    package var dataObjects: [TLV]

    /// - Throws: ``PaymentError/Code/cardReadFailed`` at step `GENERATE AC` for a malformed answer, a missing
    ///   CID, ATC or cryptogram, wrong lengths, or a CID of type `11` (RFU).
    package init(responseData data: [UInt8]) throws {
        let step = "GENERATE AC"
        let template = try CardAnswer.template(data, step: step, expecting: [0x80, 0x77], what: "response")
        let cid: [UInt8]
        let atc: [UInt8]
        let cryptogram: [UInt8]
        let iad: [UInt8]
        if template.tag == 0x80 {
            let value = template.value
            guard value.count >= 11 else {
                throw CardAnswer.failure(
                    step,
                    "format 1 response of \(value.count) bytes is shorter than CID, ATC and cryptogram (11)"
                )
            }
            cid = [value[0]]
            atc = Array(value[1..<3])
            cryptogram = Array(value[3..<11])
            iad = Array(value[11...])
            dataObjects = []
        } else {
            let primitives = ProcessingOptions.primitives(of: template.children)
            func value(_ tag: TLVTag, _ name: String) throws -> [UInt8] {
                guard let found = primitives.first(where: { $0.tag == tag }) else {
                    throw CardAnswer.failure(step, "format 2 response has no \(name) (\(tag))")
                }
                return found.value
            }
            cid = try value(0x9F27, "Cryptogram Information Data")
            atc = try value(0x9F36, "ATC")
            // CDA (EMV Book 2 §6.6.1): the cryptogram may travel only inside the Signed Dynamic Application Data.
            let signed = primitives.contains { $0.tag == 0x9F4B }
            cryptogram =
                signed
                ? primitives.first { $0.tag == 0x9F26 }?.value ?? [] : try value(0x9F26, "Application Cryptogram")
            iad = primitives.first { $0.tag == 0x9F10 }?.value ?? []
            dataObjects = primitives
        }
        guard cid.count == 1, let type = CryptogramType(cryptogramInformationData: cid[0]) else {
            throw CardAnswer.failure(step, "CID (9F27) \(cid.hexString) names no cryptogram type")
        }
        guard atc.count == 2 else { throw CardAnswer.failure(step, "ATC (9F36) has \(atc.count) bytes, expected 2") }
        guard cryptogram.count == 8 || (cryptogram.isEmpty && template.tag == 0x77) else {
            throw CardAnswer.failure(step, "Application Cryptogram (9F26) has \(cryptogram.count) bytes, expected 8")
        }
        guard iad.count <= 32 else {
            throw CardAnswer.failure(step, "Issuer Application Data (9F10) has \(iad.count) bytes, at most 32")
        }
        cryptogramInformationData = cid[0]
        cryptogramType = type
        applicationTransactionCounter = atc
        applicationCryptogram = cryptogram
        issuerApplicationData = iad
    }
}

extension PaymentSession {
    /// How the card answered GENERATE AC.
    enum GenerateACAnswer {
        case answered(GenerateACResponse)
        /// A status other than `9000`.
        case refused(StatusWord)
    }

    /// GENERATE AC `80 AE P1 00 Lc data 00` asking for `type`, with `dol` (CDOL1) filled from `values` (EMV Book 3
    /// §6.5.5, §9.3), with P1 bit 5 "CDA signature requested" when `combinedAuthentication` (Table 12).
    func generateApplicationCryptogram(
        _ type: CryptogramType,
        dol: DataObjectList,
        values: [TLVTag: [UInt8]],
        combinedAuthentication: Bool = false
    ) async throws -> GenerateACAnswer {
        let command = try CommandAPDU(
            cla: 0x80,
            ins: 0xAE,
            p1: type.referenceControl | (combinedAuthentication ? 0x10 : 0x00),
            p2: 0x00,
            data: dol.fill(with: values),
            expectedLength: 256
        )
        let response = try await transceive(command, step: Self.generateACStep)
        guard response.status == .success else { return .refused(response.status) }
        return .answered(try GenerateACResponse(responseData: response.data))
    }
}
