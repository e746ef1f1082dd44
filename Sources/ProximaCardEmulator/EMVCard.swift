// A virtual EMV contactless payment card: Visa-style qVSDC (cryptogram in the GET PROCESSING OPTIONS answer) or
// Mastercard-style M/Chip (cryptogram from GENERATE AC), for tests, the simulator and the demo.
//
// TEST CARDS ONLY. Profiles carry public test PANs and test issuer keys published in this repository.
//
// Application cryptogram scheme (an honest simplification of EMV Book 2 §8.1 session keys, not a scheme any
// issuer runs):
//
//     AC = first 8 bytes of HMAC-SHA256(issuerTestKey, dolData ‖ ATC ‖ CID)
//
// - `issuerTestKey`: the profile's key (16–64 bytes), shared by all its applications; stands in for the issuer
//   master key and the card's derived session key at once.
// - `dolData`: the data field the terminal sent, exactly as received: for qVSDC the value of tag 83 in GET
//   PROCESSING OPTIONS (PDOL-related data, which carries amount, currency, date, type and unpredictable number);
//   for M/Chip the data field of GENERATE AC (CDOL1-related data).
// - `ATC`: the Application Transaction Counter after this transaction's increment, 2 bytes big-endian.
// - `CID`: the Cryptogram Information Data byte returned (`80` ARQC, `40` TC, `00` AAC).
//
// A processor sandbox that knows the profile's key and the DOL recomputes it from the envelope's data objects;
// ``EMVCard/applicationCryptogram(issuerTestKey:dolData:atc:cid:)`` is that computation.

public import ProximaCore
internal import ProximaCrypto
internal import Synchronization

/// A virtual EMV contactless payment card with one or more applications, each run as a Visa-style qVSDC or a
/// Mastercard-style M/Chip application.
///
/// It answers SELECT of the PPSE (EMV Book B §3.3) and of each AID, GET PROCESSING OPTIONS (Book 3 §6.5.8),
/// READ RECORD (§6.5.11) and, for M/Chip, GENERATE AC (§6.5.5). The Application Transaction Counter lives in a
/// shared counter, the card's non-volatile memory: the copies a host makes for each card presence share it, so
/// every transaction on the same card — also in later taps — gets the next ATC, as with a physical card. All
/// other state (selected application, GPO done) starts afresh with each copy.
///
/// Loaded from `emv-qvsdc` and `emv-mchip` profiles (see `EMVCardProfile.swift`).
public struct EMVCard: VirtualCard {
    /// How an application computes its cryptogram.
    public enum Kernel: String, Hashable, Sendable, CaseIterable {
        /// Visa-style quick VSDC: the cryptogram comes in the GPO answer (format 2).
        case qvsdc
        /// Mastercard-style M/Chip: the GPO answer gives AIP and AFL; the cryptogram comes from GENERATE AC.
        case mchip
    }

    /// The cryptogram an application produces.
    public enum Decision: String, Hashable, Sendable, CaseIterable {
        /// Go online (CID `80`).
        case arqc
        /// Approve offline (CID `40`); for M/Chip only when the terminal asks for a TC.
        case tc
        /// Decline (CID `00`).
        case aac

        var cryptogramInformationData: UInt8 {
            switch self {
            case .arqc: 0x80
            case .tc: 0x40
            case .aac: 0x00
            }
        }

        /// AAC < ARQC < TC: a card never returns more than the terminal asked for (EMV Book 3 §6.5.5.2).
        var rank: Int {
            switch self {
            case .aac: 0
            case .arqc: 1
            case .tc: 2
            }
        }
    }

    /// One record of an application's file (answered to READ RECORD).
    public struct Record: Hashable, Sendable {
        /// Short File Identifier, 1…30.
        public var shortFileIdentifier: UInt8
        public var number: UInt8
        /// Whether the AFL flags it for offline data authentication.
        public var offlineAuthentication: Bool
        /// The record as answered, normally a `70` template.
        public var content: [UInt8]

        public init(shortFileIdentifier: UInt8, number: UInt8, offlineAuthentication: Bool, content: [UInt8]) {
            self.shortFileIdentifier = shortFileIdentifier
            self.number = number
            self.offlineAuthentication = offlineAuthentication
            self.content = content
        }

        /// A record template `70` holding `objects`.
        public init(shortFileIdentifier: UInt8, number: UInt8, offlineAuthentication: Bool, objects: [TLV]) {
            self.init(
                shortFileIdentifier: shortFileIdentifier,
                number: number,
                offlineAuthentication: offlineAuthentication,
                content: TLV(tag: 0x70, children: objects).bytes
            )
        }
    }

    /// One payment application.
    public struct Application: Hashable, Sendable {
        /// The AID (ADF Name).
        public var identifier: [UInt8]
        /// Application Label (`50`), ASCII.
        public var label: String
        /// Application Priority Indicator (`87`); `nil` leaves it out.
        public var priority: UInt8?
        /// Kernel Identifier (`9F2A`) in the PPSE entry; `nil` leaves it out.
        public var kernelIdentifier: [UInt8]?
        public var kernel: Kernel
        /// PDOL (`9F38`) as tag-length pairs; empty: no PDOL.
        public var processingOptionsDOL: [UInt8]
        /// CDOL1 (`8C`) as tag-length pairs; M/Chip only. Records should carry it as tag `8C` too.
        public var cdol1: [UInt8]
        /// Application Interchange Profile (`82`).
        public var applicationInterchangeProfile: [UInt8]
        /// Card Transaction Qualifiers (`9F6C`) returned by qVSDC in the GPO answer; `nil` leaves them out.
        public var cardTransactionQualifiers: [UInt8]?
        /// Issuer Application Data (`9F10`).
        public var issuerApplicationData: [UInt8]
        public var decision: Decision
        /// A status word SELECT of this AID answers instead of the FCI (`6A81` blocked, `6283` invalidated).
        public var selectStatus: UInt16?
        /// A status word GET PROCESSING OPTIONS answers instead (`6984`, `6985`, `6986`, `6A81`).
        public var processingOptionsStatus: UInt16?
        /// GPO response format: 1 (`80`: AIP ‖ AFL) or 2 (`77`). qVSDC answers format 2 unless this says 1.
        public var processingOptionsFormat: Int
        /// Further data objects for a format 2 GPO answer (track 2, PAN sequence number, form factor …).
        public var processingOptionsObjects: [TLV]
        public var records: [Record]
        /// The ATC before the first transaction; each GET PROCESSING OPTIONS adds 1.
        public var initialTransactionCounter: UInt16
        /// Offline data authentication: fDDA in the qVSDC GPO answer, CDA in GENERATE AC when asked
        /// (`EMVCardAuthentication.swift`); `nil`: the card signs nothing.
        package var authentication: CardAuthentication?

        public init(
            identifier: [UInt8],
            label: String,
            priority: UInt8? = nil,
            kernelIdentifier: [UInt8]? = nil,
            kernel: Kernel,
            processingOptionsDOL: [UInt8],
            cdol1: [UInt8] = [],
            applicationInterchangeProfile: [UInt8],
            cardTransactionQualifiers: [UInt8]? = nil,
            issuerApplicationData: [UInt8],
            decision: Decision = .arqc,
            selectStatus: UInt16? = nil,
            processingOptionsStatus: UInt16? = nil,
            processingOptionsFormat: Int? = nil,
            processingOptionsObjects: [TLV] = [],
            records: [Record],
            initialTransactionCounter: UInt16 = 0
        ) {
            self.identifier = identifier
            self.label = label
            self.priority = priority
            self.kernelIdentifier = kernelIdentifier
            self.kernel = kernel
            self.processingOptionsDOL = processingOptionsDOL
            self.cdol1 = cdol1
            self.applicationInterchangeProfile = applicationInterchangeProfile
            self.cardTransactionQualifiers = cardTransactionQualifiers
            self.issuerApplicationData = issuerApplicationData
            self.decision = decision
            self.selectStatus = selectStatus
            self.processingOptionsStatus = processingOptionsStatus
            self.processingOptionsFormat = processingOptionsFormat ?? (kernel == .qvsdc ? 2 : 1)
            self.processingOptionsObjects = processingOptionsObjects
            self.records = records
            self.initialTransactionCounter = initialTransactionCounter
        }

        /// The AFL (`94`) the records imply: one entry per run of consecutive record numbers in an SFI, with the
        /// count of its records flagged for offline data authentication (they come first in the run).
        public var applicationFileLocator: [UInt8] {
            var afl: [UInt8] = []
            let sorted = records.sorted { ($0.shortFileIdentifier, $0.number) < ($1.shortFileIdentifier, $1.number) }
            var index = 0
            while index < sorted.count {
                let first = sorted[index]
                var last = first
                var oda = first.offlineAuthentication ? 1 : 0
                var next = index + 1
                while next < sorted.count, sorted[next].shortFileIdentifier == first.shortFileIdentifier,
                    Int(sorted[next].number) == Int(last.number) + 1
                {
                    last = sorted[next]
                    if last.offlineAuthentication { oda += 1 }
                    next += 1
                }
                afl += [first.shortFileIdentifier << 3, first.number, last.number, UInt8(oda)]
                index = next
            }
            return afl
        }

        /// The sum of the lengths a DOL asks for; `nil` when it does not parse.
        static func dataLength(of dol: [UInt8]) -> Int? {
            (try? DataObjectList(bytes: dol))?.totalLength
        }
    }

    public var name: String
    public var technology: CardTechnology
    public var uid: [UInt8]
    public var atr: [UInt8]
    public var ats: [UInt8]
    /// TEST issuer key of the cryptogram scheme in this file's header.
    public var issuerTestKey: [UInt8]
    public var applications: [Application]

    /// The card's non-volatile counters, shared by every copy.
    private let counters = TransactionCounters()
    /// Per-presence state.
    private var selected: Int?
    private var processingOptionsDone = false
    private var cryptogramDone = false
    /// The PDOL-related data of this transaction's GPO (CDA hashes it).
    private var processingOptionsData: [UInt8] = []

    public init(
        name: String,
        technology: CardTechnology = .iso14443A,
        uid: [UInt8],
        atr: [UInt8] = ScriptedCard.contactlessPseudoATR,
        ats: [UInt8] = [],
        issuerTestKey: [UInt8],
        applications: [Application]
    ) {
        self.name = name
        self.technology = technology
        self.uid = uid
        self.atr = atr
        self.ats = ats
        self.issuerTestKey = issuerTestKey
        self.applications = applications
    }

    /// The ATC an application has reached (0 before its first transaction).
    public func transactionCounter(of identifier: [UInt8]) -> UInt16? {
        guard let application = applications.first(where: { $0.identifier == identifier }) else { return nil }
        return counters.current(identifier, initial: application.initialTransactionCounter)
    }

    /// The cryptogram scheme of this file's header: first 8 bytes of HMAC-SHA256(key, dolData ‖ ATC ‖ CID).
    ///
    /// - Returns: `nil` only when OpenSSL fails.
    public static func applicationCryptogram(issuerTestKey: [UInt8], dolData: [UInt8], atc: UInt16, cid: UInt8)
        -> [UInt8]?
    {
        let message = dolData + [UInt8(atc >> 8), UInt8(truncatingIfNeeded: atc), cid]
        guard let mac = try? HMAC.authenticationCode(for: message, key: issuerTestKey, digest: .sha256) else {
            return nil
        }
        return Array(mac.prefix(8))
    }

    // MARK: Answering commands

    private enum Status {
        static let success: [UInt8] = [0x90, 0x00]
        static let wrongLength: [UInt8] = [0x67, 0x00]
        static let conditionsNotSatisfied: [UInt8] = [0x69, 0x85]
        static let wrongData: [UInt8] = [0x6A, 0x80]
        static let fileNotFound: [UInt8] = [0x6A, 0x82]
        static let recordNotFound: [UInt8] = [0x6A, 0x83]
        static let incorrectParameters: [UInt8] = [0x6A, 0x86]
        static let instructionNotSupported: [UInt8] = [0x6D, 0x00]
        static let classNotSupported: [UInt8] = [0x6E, 0x00]
        static let noPreciseDiagnosis: [UInt8] = [0x6F, 0x00]
    }

    public mutating func respond(to command: [UInt8]) -> [UInt8] {
        guard let apdu = try? CommandAPDU(bytes: command) else { return Status.wrongLength }
        switch (apdu.cla, apdu.ins) {
        case (0x00, 0xA4): return select(apdu)
        case (0x80, 0xA8): return getProcessingOptions(apdu)
        case (0x00, 0xB2): return readRecord(apdu)
        case (0x80, 0xAE): return generateApplicationCryptogram(apdu)
        case (_, 0xA4), (_, 0xA8), (_, 0xB2), (_, 0xAE): return Status.classNotSupported
        default: return Status.instructionNotSupported
        }
    }

    private static let ppseName: [UInt8] = Array("2PAY.SYS.DDF01".utf8)

    /// SELECT by name (EMV Book 1 §11.3): the PPSE directory, or an application by full or partial AID.
    private mutating func select(_ apdu: CommandAPDU) -> [UInt8] {
        guard apdu.p1 == 0x04, apdu.p2 == 0x00 else { return Status.incorrectParameters }
        selected = nil
        processingOptionsDone = false
        cryptogramDone = false
        processingOptionsData = []
        if apdu.data == Self.ppseName {
            let entries = applications.map { application in
                var objects = [
                    TLV(tag: 0x4F, value: application.identifier),
                    TLV(tag: 0x50, value: Array(application.label.utf8)),
                ]
                if let priority = application.priority { objects.append(TLV(tag: 0x87, value: [priority])) }
                if let kernel = application.kernelIdentifier { objects.append(TLV(tag: 0x9F2A, value: kernel)) }
                return TLV(tag: 0x61, children: objects)
            }
            let fci = TLV(
                tag: 0x6F,
                children: [
                    TLV(tag: 0x84, value: Self.ppseName),
                    TLV(tag: 0xA5, children: [TLV(tag: 0xBF0C, children: entries)]),
                ]
            )
            return fci.bytes + Status.success
        }
        guard apdu.data.count >= 5,
            let index = applications.firstIndex(where: { $0.identifier.starts(with: apdu.data) })
        else { return Status.fileNotFound }
        let application = applications[index]
        if let status = application.selectStatus { return [UInt8(status >> 8), UInt8(truncatingIfNeeded: status)] }
        selected = index
        var proprietary = [TLV(tag: 0x50, value: Array(application.label.utf8))]
        if let priority = application.priority { proprietary.append(TLV(tag: 0x87, value: [priority])) }
        if !application.processingOptionsDOL.isEmpty {
            proprietary.append(TLV(tag: 0x9F38, value: application.processingOptionsDOL))
        }
        proprietary.append(TLV(tag: 0x5F2D, value: Array("en".utf8)))
        let fci = TLV(
            tag: 0x6F,
            children: [TLV(tag: 0x84, value: application.identifier), TLV(tag: 0xA5, children: proprietary)]
        )
        return fci.bytes + Status.success
    }

    /// GET PROCESSING OPTIONS (EMV Book 3 §6.5.8): checks the PDOL data, counts the transaction and answers
    /// AIP and AFL, with the cryptogram for qVSDC.
    private mutating func getProcessingOptions(_ apdu: CommandAPDU) -> [UInt8] {
        guard apdu.p1 == 0x00, apdu.p2 == 0x00 else { return Status.incorrectParameters }
        guard let index = selected, !processingOptionsDone else { return Status.conditionsNotSatisfied }
        let application = applications[index]
        guard let template = try? TLV.decode(apdu.data), template.tag == 0x83,
            template.value.count == Application.dataLength(of: application.processingOptionsDOL)
        else { return Status.wrongLength }
        if let status = application.processingOptionsStatus {
            return [UInt8(status >> 8), UInt8(truncatingIfNeeded: status)]
        }
        guard
            let atc = counters.increment(application.identifier, initial: application.initialTransactionCounter)
        else { return Status.conditionsNotSatisfied }
        processingOptionsDone = true
        processingOptionsData = template.value
        let afl = application.applicationFileLocator
        if application.processingOptionsFormat == 1 {
            return TLV(tag: 0x80, value: application.applicationInterchangeProfile + afl).bytes + Status.success
        }
        var objects = [TLV(tag: 0x82, value: application.applicationInterchangeProfile)]
        if !afl.isEmpty { objects.append(TLV(tag: 0x94, value: afl)) }
        if application.kernel == .qvsdc {
            let cid = application.decision.cryptogramInformationData
            guard
                let cryptogram = Self.applicationCryptogram(
                    issuerTestKey: issuerTestKey,
                    dolData: template.value,
                    atc: atc,
                    cid: cid
                )
            else { return Status.noPreciseDiagnosis }
            cryptogramDone = true
            objects += [
                TLV(tag: 0x9F36, value: [UInt8(atc >> 8), UInt8(truncatingIfNeeded: atc)]),
                TLV(tag: 0x9F26, value: cryptogram),
                TLV(tag: 0x9F27, value: [cid]),
                TLV(tag: 0x9F10, value: application.issuerApplicationData),
            ]
            if let ctq = application.cardTransactionQualifiers { objects.append(TLV(tag: 0x9F6C, value: ctq)) }
            if let authentication = application.authentication {
                // fDDA: ICC Dynamic Data = ICC Dynamic Number (the ATC, 2 bytes) with its length.
                guard
                    let signature = authentication.signedDynamicData(
                        iccDynamicData: [0x02, UInt8(atc >> 8), UInt8(truncatingIfNeeded: atc)],
                        terminalDynamicData: authentication.fastDDATerminalData(
                            pdolData: template.value,
                            pdol: application.processingOptionsDOL
                        )
                    )
                else { return Status.noPreciseDiagnosis }
                objects.append(TLV(tag: 0x9F4B, value: signature))
            }
        }
        objects += application.processingOptionsObjects
        return TLV(tag: 0x77, children: objects).bytes + Status.success
    }

    /// READ RECORD (EMV Book 3 §6.5.11): P1 the record number, P2 the SFI in bits 8–4 and `100`.
    private func readRecord(_ apdu: CommandAPDU) -> [UInt8] {
        guard apdu.p2 & 0x07 == 0x04, apdu.p1 != 0 else { return Status.incorrectParameters }
        guard let index = selected else { return Status.conditionsNotSatisfied }
        let sfi = apdu.p2 >> 3
        guard
            let record = applications[index].records.first(where: {
                $0.shortFileIdentifier == sfi && $0.number == apdu.p1
            })
        else { return Status.recordNotFound }
        return record.content + Status.success
    }

    /// GENERATE AC (EMV Book 3 §6.5.5), M/Chip only and once per transaction: the cryptogram over the CDOL1 data.
    private mutating func generateApplicationCryptogram(_ apdu: CommandAPDU) -> [UInt8] {
        guard apdu.p2 == 0x00, apdu.p1 & 0xC0 != 0xC0 else { return Status.incorrectParameters }
        guard let index = selected, processingOptionsDone, !cryptogramDone, applications[index].kernel == .mchip
        else { return Status.conditionsNotSatisfied }
        let application = applications[index]
        guard apdu.data.count == Application.dataLength(of: application.cdol1) else { return Status.wrongLength }
        let requested: Decision =
            switch apdu.p1 & 0xC0 {
            case 0x40: .tc
            case 0x80: .arqc
            default: .aac
            }
        let decision = application.decision.rank <= requested.rank ? application.decision : requested
        let atc = counters.current(application.identifier, initial: application.initialTransactionCounter)
        let cid = decision.cryptogramInformationData
        guard
            let cryptogram = Self.applicationCryptogram(
                issuerTestKey: issuerTestKey,
                dolData: apdu.data,
                atc: atc,
                cid: cid
            )
        else { return Status.noPreciseDiagnosis }
        cryptogramDone = true
        if apdu.p1 & 0x10 != 0, decision != .aac, let authentication = application.authentication {
            return combinedAuthenticationAnswer(
                authentication,
                cid: cid,
                atc: atc,
                cryptogram: cryptogram,
                application: application,
                cdol1Data: apdu.data
            )
        }
        let answer = TLV(
            tag: 0x77,
            children: [
                TLV(tag: 0x9F27, value: [cid]),
                TLV(tag: 0x9F36, value: [UInt8(atc >> 8), UInt8(truncatingIfNeeded: atc)]),
                TLV(tag: 0x9F26, value: cryptogram),
                TLV(tag: 0x9F10, value: application.issuerApplicationData),
            ]
        )
        return answer.bytes + Status.success
    }
}

extension EMVCard {
    /// A CDA answer (EMV Book 2 §6.6.1): `77` with CID, ATC, `9F4B` and IAD; the cryptogram only inside `9F4B`,
    /// whose Transaction Data Hash Code covers the PDOL data, the CDOL1 data and the other objects of the answer.
    private func combinedAuthenticationAnswer(
        _ authentication: CardAuthentication,
        cid: UInt8,
        atc: UInt16,
        cryptogram: [UInt8],
        application: Application,
        cdol1Data: [UInt8]
    ) -> [UInt8] {
        let before = [
            TLV(tag: 0x9F27, value: [cid]),
            TLV(tag: 0x9F36, value: [UInt8(atc >> 8), UInt8(truncatingIfNeeded: atc)]),
        ]
        let after = [TLV(tag: 0x9F10, value: application.issuerApplicationData)]
        let unpredictableNumber =
            CardAuthentication.values(of: [0x9F37], in: cdol1Data, dol: application.cdol1)[0x9F37] ?? []
        guard
            let hash = try? SHA1.hash(processingOptionsData + cdol1Data + (before + after).flatMap(\.bytes)),
            let signature = authentication.signedDynamicData(
                iccDynamicData: [0x02, UInt8(atc >> 8), UInt8(truncatingIfNeeded: atc), cid] + cryptogram + hash,
                terminalDynamicData: unpredictableNumber
            )
        else { return Status.noPreciseDiagnosis }
        return TLV(tag: 0x77, children: before + [TLV(tag: 0x9F4B, value: signature)] + after).bytes + Status.success
    }
}

// MARK: - Printing

/// A card prints its name and AIDs only: records hold (test) PANs and track data, and the key is a key.
extension EMVCard: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "EMVCard(\"\(name)\", " + applications.map(\.description).joined(separator: ", ") + ")"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }
}

extension EMVCard.Application: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "\(identifier.hexString) \(kernel.rawValue) \(records.count) records, \(decision.rawValue)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }
}

extension EMVCard.Record: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "SFI \(shortFileIdentifier) record \(number) (\(content.count) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["summary": description], displayStyle: .struct) }
}

/// The Application Transaction Counters of one card, by AID: the card's non-volatile memory, shared by every
/// copy of an ``EMVCard``.
///
/// `Sendable` because its only state sits behind a `Mutex`.
final class TransactionCounters: Sendable {
    private let values = Mutex<[[UInt8]: UInt16]>([:])

    func current(_ aid: [UInt8], initial: UInt16) -> UInt16 {
        values.withLock { $0[aid] ?? initial }
    }

    /// Adds one and returns the new value; `nil` when the counter is exhausted (`FFFF`), as a card then refuses
    /// every transaction.
    func increment(_ aid: [UInt8], initial: UInt16) -> UInt16? {
        values.withLock { counters in
            let value = counters[aid] ?? initial
            guard value < UInt16.max else { return nil }
            counters[aid] = value + 1
            return value + 1
        }
    }
}
