internal import EMVCommon
internal import ProximaCore
internal import ProximaCrypto

// Offline data authentication in a transaction (EMV 4.4 Book 2 §6, Book 3 §10.3): retrieve the CA public key by
// RID and `8F`, recover the issuer and ICC public keys (ODA/PublicKeyCertificates.swift), then verify the card's
// Signed Dynamic Application Data:
//
// - fDDA (Kernels 3, 6, 7: the cryptogram came with GET PROCESSING OPTIONS): `9F4B` from the GPO answer or a record,
//   over the fixed terminal data of ODA/SignedDynamicData.swift. Performed when the card approves offline (TC),
//   as Book C-3 does; an online request is authorised by the issuer and needs none.
// - CDA (Kernels 2, 4, 5: the cryptogram comes from GENERATE AC): the ICC key is recovered before GENERATE AC, CDA
//   is requested in P1 (Book 3 §6.5.5.2, bit 5), and `9F4B` in the answer carries the cryptogram (Book 2 §6.6.2).
//
// An offline approval (TC) is reported approved only when its ODA succeeded (``PaymentSession/outcome``).

/// What offline data authentication concluded for one transaction.
enum OfflineAuthenticationResult: Hashable {
    /// Not attempted: the card does not support it, or the cryptogram (ARQC, AAC) needs none.
    case notPerformed
    case succeeded
    case failed(OfflineAuthenticationFailure)
}

extension PaymentSession {
    /// The RID of the selected application.
    static func rid(of application: EMVApplication) -> [UInt8] { Array(application.identifier.prefix(5)) }

    /// The Application PAN as certified: `5A`, or the digits of track 2 (`57`) before the separator, F-padded.
    static func certifiedPAN(_ card: CardDataStore) -> [UInt8]? {
        if let pan = card[0x5A] { return pan }
        guard let track = card[0x57] else { return nil }
        var nibbles = Array(track.flatMap { [$0 >> 4, $0 & 0x0F] }.prefix { $0 != 0x0D })
        if nibbles.count % 2 == 1 { nibbles.append(0x0F) }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    /// Book 2 §6.2–6.4: the ICC public key of the card, certified through the issuer by a CA key the terminal holds.
    ///
    /// - Parameter staticData: the static data to be authenticated (Book 3 §10.3), the AIP not yet included.
    func iccPublicKey(
        application: EMVApplication,
        card: CardDataStore,
        staticData: [UInt8],
        aip: [UInt8]
    ) throws(OfflineAuthenticationFailure) -> RSA.PublicKey {
        func required(_ tag: TLVTag, _ name: String) throws(OfflineAuthenticationFailure) -> [UInt8] {
            guard let value = card[tag], !value.isEmpty else {
                throw OfflineAuthenticationFailure(.missingData, "the card gave no \(name) (\(tag))")
            }
            return value
        }
        let index = try required(0x8F, "Certification Authority Public Key Index")
        guard index.count == 1 else {
            throw OfflineAuthenticationFailure(.missingData, "CA Public Key Index (8F) is not 1 byte")
        }
        let rid = Self.rid(of: application)
        let today = transaction.date
        guard let authority = certificationAuthorities.key(rid: rid, index: index[0]),
            (authority.expiry.year, authority.expiry.month, authority.expiry.day) >= (
                today.year, today.month, today.day
            )
        else {
            throw OfflineAuthenticationFailure(
                .unknownCertificationAuthority,
                "no valid CA public key for RID \(rid.hexString) index \(index.hexString)"
            )
        }
        guard let pan = Self.certifiedPAN(card) else {
            throw OfflineAuthenticationFailure(
                .missingData,
                "the card gave no PAN (5A) to check the certificates against"
            )
        }
        var signedData = staticData
        if let tagList = card[0x9F4A] {
            // Book 3 §10.3: the SDA Tag List may only name the AIP.
            guard tagList == [0x82] else {
                throw OfflineAuthenticationFailure(
                    .missingData,
                    "SDA Tag List (9F4A) names tags other than the AIP (82)"
                )
            }
            signedData += aip
        }
        let issuer = try PublicKeyCertificate.issuerKey(
            certificate: try required(0x90, "Issuer Public Key Certificate"),
            remainder: card[0x92] ?? [],
            exponent: try required(0x9F32, "Issuer Public Key Exponent"),
            authority: authority,
            pan: pan,
            today: today
        )
        let icc = try PublicKeyCertificate.iccKey(
            certificate: try required(0x9F46, "ICC Public Key Certificate"),
            remainder: card[0x9F48] ?? [],
            exponent: try required(0x9F47, "ICC Public Key Exponent"),
            issuerKey: issuer.key,
            staticData: signedData,
            pan: pan,
            today: today
        )
        return icc.key
    }

    /// fDDA: the ICC key, then `9F4B` over the fDDA terminal dynamic data. Sets the TVR's "DDA failed" on failure.
    mutating func fastDynamicAuthentication(
        application: EMVApplication,
        card: CardDataStore,
        staticData: [UInt8],
        aip: [UInt8]
    ) -> OfflineAuthenticationResult {
        do throws(OfflineAuthenticationFailure) {
            let key = try iccPublicKey(application: application, card: card, staticData: staticData, aip: aip)
            guard let signature = card[0x9F4B] else {
                throw OfflineAuthenticationFailure(
                    .missingData,
                    "the card gave no Signed Dynamic Application Data (9F4B)"
                )
            }
            let terminalData = SignedDynamicData.fastDDATerminalData(
                unpredictableNumber: terminalData[0x9F37] ?? [],
                amountAuthorised: terminalData[0x9F02] ?? [],
                currencyCode: terminalData[0x5F2A] ?? [],
                cardAuthenticationData: card[0x9F69]
            )
            _ = try SignedDynamicData.verify(signature, iccKey: key, terminalDynamicData: terminalData)
            setTVR(byte: 0, clearing: 0x80)
            return .succeeded
        } catch {
            setTVR(byte: 0, setting: 0x08, clearing: 0x80)  // DDA failed
            return .failed(error)
        }
    }

    /// CDA before GENERATE AC: the ICC key when the card supports CDA (AIP byte 1 bit 1) and the terminal holds CA
    /// keys; `nil` otherwise. A failed recovery sets "CDA failed" in the TVR and CDA is not requested (Book 2
    /// §6.6: the terminal then asks for the cryptogram without CDA).
    mutating func prepareCombinedAuthentication(
        application: EMVApplication,
        card: CardDataStore,
        aip: [UInt8]
    ) -> (key: RSA.PublicKey?, result: OfflineAuthenticationResult) {
        guard aip[0] & 0x01 != 0, !certificationAuthorities.keys.isEmpty else { return (nil, .notPerformed) }
        do throws(OfflineAuthenticationFailure) {
            let key = try iccPublicKey(
                application: application,
                card: card,
                staticData: staticDataToAuthenticate,
                aip: aip
            )
            setTVR(byte: 0, clearing: 0x80)
            return (key, .notPerformed)
        } catch {
            setTVR(byte: 0, setting: 0x04, clearing: 0x80)  // CDA failed
            return (nil, .failed(error))
        }
    }

    /// CDA after GENERATE AC (Book 2 §6.6.2): `9F4B` verifies with the ICC key over the Unpredictable Number, its
    /// CID equals `9F27`, and its Transaction Data Hash Code covers what was exchanged.
    ///
    /// - Returns: the application cryptogram recovered from the signature.
    mutating func completeCombinedAuthentication(
        _ answer: GenerateACResponse,
        iccKey: RSA.PublicKey,
        cdol1Data: [UInt8]
    ) -> (cryptogram: [UInt8]?, result: OfflineAuthenticationResult) {
        do throws(OfflineAuthenticationFailure) {
            guard let signature = answer.dataObjects.first(where: { $0.tag == 0x9F4B })?.value else {
                throw OfflineAuthenticationFailure(
                    .missingData,
                    "GENERATE AC answered without Signed Dynamic Application Data (9F4B)"
                )
            }
            let recovered = try SignedDynamicData.verify(
                signature,
                iccKey: iccKey,
                terminalDynamicData: terminalData[0x9F37] ?? []
            )
            guard let fields = recovered.combinedFields else {
                throw OfflineAuthenticationFailure(
                    .invalidSignature,
                    "ICC Dynamic Data is too short for CDA (Book 2 Table 19)"
                )
            }
            guard fields.cryptogramInformationData == answer.cryptogramInformationData else {
                throw OfflineAuthenticationFailure(.invalidSignature, "the signed CID differs from 9F27")
            }
            let hash = SignedDynamicData.transactionDataHashCode(
                processingOptionsData: processingOptionsData,
                cdol1Data: cdol1Data,
                responseObjects: answer.dataObjects
            )
            guard hash == fields.transactionDataHashCode else {
                throw OfflineAuthenticationFailure(.invalidSignature, "the Transaction Data Hash Code does not match")
            }
            if !answer.applicationCryptogram.isEmpty && answer.applicationCryptogram != fields.applicationCryptogram {
                throw OfflineAuthenticationFailure(.invalidSignature, "the signed cryptogram differs from 9F26")
            }
            setTVR(byte: 0, clearing: 0x80)
            return (fields.applicationCryptogram, .succeeded)
        } catch {
            setTVR(byte: 0, setting: 0x04, clearing: 0x80)  // CDA failed
            return (nil, .failed(error))
        }
    }

    /// Sets and clears bits of one TVR (`95`) byte.
    mutating func setTVR(byte index: Int, setting bits: UInt8 = 0, clearing cleared: UInt8 = 0) {
        var tvr = terminalData[0x95] ?? [0, 0, 0, 0, 0]
        guard tvr.count == 5 else { return }
        tvr[index] = (tvr[index] & ~cleared) | bits
        terminalData[0x95] = tvr
    }
}

extension PaymentSession {
    /// How the card answered a GENERATE AC that may carry CDA.
    enum AuthenticatedAnswer {
        /// `onlineIfFailed`: ODA failed before GENERATE AC, so the cryptogram was asked for without CDA and the
        /// issuer judges it online (TVR "CDA failed"); a CDA that fails on the answer leaves no trustworthy
        /// cryptogram and declines (Book 2 §6.6.2).
        case answered(GenerateACResponse, OfflineAuthenticationResult, onlineIfFailed: Bool)
        /// A status other than `9000`.
        case refused(StatusWord)
    }

    /// GENERATE AC with CDOL1 filled from the card's and terminal's data, requesting CDA when the card supports it
    /// and its ICC key was recovered (Book 2 §6.6), for the cryptogram terminal action analysis chooses on the TVR
    /// that CDA's preparation leaves (``terminalActionAnalysis(_:card:)``). The cryptogram, ATC, CID and IAD go
    /// into `card`; under CDA the cryptogram is the one the signature carries, and none is kept when CDA failed.
    ///
    /// - Throws: ``PaymentError/Code/cardReadFailed`` for a malformed answer, one without a cryptogram where no
    ///   CDA was requested, or a cryptogram above the one asked for (Book 3 §6.5.5.2: a TC only to a TC request,
    ///   an ARQC not to an AAC request); channel errors.
    mutating func generateACWithCombinedAuthentication(
        _ candidate: Candidate,
        dol: DataObjectList,
        card: inout CardDataStore,
        aip: [UInt8]
    ) async throws -> AuthenticatedAnswer {
        let step = Self.generateACStep
        let application = candidate.application
        let cda = prepareCombinedAuthentication(application: application, card: card, aip: aip)
        let type = terminalActionAnalysis(candidate, card: card)
        try checkCancellation(before: step)
        var values = card.values  // the terminal's value wins where both have the tag
        values.reserveCapacity(values.count + terminalData.count)
        for (tag, value) in terminalData { values[tag] = value }
        let answer: GenerateACResponse
        switch try await generateApplicationCryptogram(
            type,
            dol: dol,
            values: values,
            combinedAuthentication: cda.key != nil
        ) {
        case .answered(let response): answer = response
        case .refused(let status): return .refused(status)
        }
        guard answer.cryptogramType.rank <= type.rank else {
            throw CardAnswer.failure(
                step,
                "card returned a \(answer.cryptogramType) to a request for \(type == .tc ? "a TC" : "an \(type)")"
                    + " (Book 3 §6.5.5.2)"
            )
        }
        var result = cda.result
        var cryptogram = answer.applicationCryptogram
        let signed = answer.dataObjects.contains { $0.tag == 0x9F4B }
        if let key = cda.key, signed || answer.cryptogramType != .aac {
            let completed = completeCombinedAuthentication(answer, iccKey: key, cdol1Data: dol.fill(with: values))
            result = completed.result
            cryptogram = completed.cryptogram ?? []
        } else if cryptogram.isEmpty {
            throw CardAnswer.failure(step, "answer has no Application Cryptogram (9F26) and no CDA was requested")
        }
        card.replace(0x9F27, [answer.cryptogramInformationData], step: step)
        card.replace(0x9F36, answer.applicationTransactionCounter, step: step)
        if !cryptogram.isEmpty { card.replace(0x9F26, cryptogram, step: step) }
        if !answer.issuerApplicationData.isEmpty { card.replace(0x9F10, answer.issuerApplicationData, step: step) }
        return .answered(answer, result, onlineIfFailed: cda.key == nil)
    }
}

extension PaymentSession {
    /// Kernel 3 after `quickVSDC`: an offline approval (TC) needs fDDA (Book C-3); CTQ byte 1 b6 "go online if
    /// offline data authentication fails" sends a failed one online when the reader can go online, else it declines.
    mutating func authenticatedOffline(
        _ result: KernelResult,
        application: EMVApplication,
        card: CardDataStore,
        options: ProcessingOptions
    ) -> KernelResult {
        guard result.type == .tc else { return result }
        var authenticated = result
        authenticated.onlineIfOfflineAuthenticationFails =
            (card[0x9F6C]?.first ?? 0) & 0x20 != 0 && readerIsOnlineCapable
        authenticated.offlineAuthentication = fastDynamicAuthentication(
            application: application,
            card: card,
            staticData: staticDataToAuthenticate,
            aip: options.applicationInterchangeProfile
        )
        return authenticated
    }
}
