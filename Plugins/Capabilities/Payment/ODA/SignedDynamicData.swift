package import ProximaCore
package import ProximaCrypto

// Signed Dynamic Application Data (tag 9F4B), after EMV 4.4 Book 2 §6.5 (dynamic signature verification, Table 17
// "Format of the data recovered from the Signed Dynamic Application Data") and §6.6 (combined DDA/application
// cryptogram generation, Table 19 "ICC Dynamic Data" for CDA, §6.6.2 the Transaction Data Hash Code).
//
// fDDA (Kernel 3, Visa; also used here by Kernels 6 and 7) signs the same Table 17 format; its terminal dynamic data
// is fixed instead of a DDOL: the Unpredictable Number (9F37) and, for fDDA version 01 (byte 1 of Card
// Authentication Related Data 9F69), the Amount, Authorised (9F02), the Transaction Currency Code (5F2A) and 9F69
// itself, in that order (EMV Contactless Book C-3 Annex C "fDDA"; the public text was not in reach, so this follows
// the published descriptions of VCPS fDDA and the implementations the notes list).

/// The data recovered from a verified Signed Dynamic Application Data.
package struct SignedDynamicData: Hashable, Sendable {
    /// ICC Dynamic Data (Table 17), its length byte LDD excluded.
    package var iccDynamicData: [UInt8]

    /// The ICC Dynamic Number (the first LDD-prefixed field of the ICC Dynamic Data, 2–8 bytes).
    package var iccDynamicNumber: [UInt8]? {
        guard let length = iccDynamicData.first, (2...8).contains(length), iccDynamicData.count > Int(length) else {
            return nil
        }
        return Array(iccDynamicData[1...Int(length)])
    }

    static let format: UInt8 = 0x05

    /// Recovers and checks `signature` with the ICC Public Key; `terminalDynamicData` completes the hash
    /// (Book 2 §6.5.2 steps 1–7).
    ///
    /// - Throws: ``OfflineAuthenticationFailure/Code/invalidSignature`` for a length other than the key's, a wrong
    ///   header, trailer, format or algorithm, an ICC Dynamic Data length beyond the data, or a hash mismatch.
    package static func verify(_ signature: [UInt8], iccKey: RSA.PublicKey, terminalDynamicData: [UInt8])
        throws(OfflineAuthenticationFailure) -> SignedDynamicData
    {
        let what = "Signed Dynamic Application Data (9F4B)"
        guard signature.count == iccKey.byteCount else {
            throw OfflineAuthenticationFailure(
                .invalidSignature,
                "\(what) has \(signature.count) bytes; the ICC key has \(iccKey.byteCount)"
            )
        }
        guard let recovered = try? iccKey.recover(signature), recovered.count >= 64 else {
            throw OfflineAuthenticationFailure(.invalidSignature, "\(what) does not recover with the ICC key")
        }
        let n = recovered.count
        guard recovered[0] == PublicKeyCertificate.header, recovered[n - 1] == PublicKeyCertificate.trailer,
            recovered[1] == format, recovered[2] == PublicKeyCertificate.sha1Indicator
        else {
            throw OfflineAuthenticationFailure(
                .invalidSignature,
                "\(what) recovers without header 6A, format 05, SHA-1 and trailer BC"
            )
        }
        let length = Int(recovered[3])
        guard 4 + length <= n - 21 else {
            throw OfflineAuthenticationFailure(
                .invalidSignature,
                "\(what): ICC Dynamic Data length \(length) exceeds the signature"
            )
        }
        let hashInput = Array(recovered[1..<(n - 21)]) + terminalDynamicData
        guard let digest = try? SHA1.hash(hashInput), digest == Array(recovered[(n - 21)..<(n - 1)]) else {
            throw OfflineAuthenticationFailure(.invalidSignature, "\(what): the hash result does not match")
        }
        return SignedDynamicData(iccDynamicData: Array(recovered[4..<(4 + length)]))
    }

    /// The fDDA terminal dynamic data: `9F37`, then for version `01` of `9F69` also `9F02`, `5F2A` and `9F69`.
    package static func fastDDATerminalData(
        unpredictableNumber: [UInt8],
        amountAuthorised: [UInt8],
        currencyCode: [UInt8],
        cardAuthenticationData: [UInt8]?
    ) -> [UInt8] {
        guard let cardAuthenticationData, cardAuthenticationData.first == 0x01 else { return unpredictableNumber }
        return unpredictableNumber + amountAuthorised + currencyCode + cardAuthenticationData
    }

    /// The CDA fields of the ICC Dynamic Data (Book 2 §6.6.1 Table 19): ICC Dynamic Number, Cryptogram Information
    /// Data, Application Cryptogram (8) and Transaction Data Hash Code (20).
    package struct CombinedFields: Hashable, Sendable {
        package var iccDynamicNumber: [UInt8]
        package var cryptogramInformationData: UInt8
        package var applicationCryptogram: [UInt8]
        package var transactionDataHashCode: [UInt8]
    }

    /// The ICC Dynamic Data read as CDA's Table 19, or `nil` when it is too short or its number length is not 2–8.
    package var combinedFields: CombinedFields? {
        guard let number = iccDynamicNumber else { return nil }
        let start = 1 + number.count
        guard iccDynamicData.count >= start + 29 else { return nil }
        return CombinedFields(
            iccDynamicNumber: number,
            cryptogramInformationData: iccDynamicData[start],
            applicationCryptogram: Array(iccDynamicData[(start + 1)..<(start + 9)]),
            transactionDataHashCode: Array(iccDynamicData[(start + 9)..<(start + 29)])
        )
    }

    /// The CDA Transaction Data Hash Code (Book 2 §6.6.2 step 12, first GENERATE AC): SHA-1 of the PDOL-related
    /// data as sent in GET PROCESSING OPTIONS, the CDOL1-related data as sent in GENERATE AC, and every data object
    /// of the GENERATE AC answer's `77` template except `9F4B`, as tag, length and value in the order returned.
    package static func transactionDataHashCode(
        processingOptionsData: [UInt8],
        cdol1Data: [UInt8],
        responseObjects: [TLV]
    ) -> [UInt8]? {
        let response = responseObjects.filter { $0.tag != 0x9F4B }.flatMap(\.bytes)
        return try? SHA1.hash(processingOptionsData + cdol1Data + response)
    }
}
