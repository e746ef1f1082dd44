internal import ProximaCore

// MARK: - Profiles

extension EMVCard {
    /// The `emv-qvsdc` profile kind: applications default to Visa-style qVSDC.
    public static let qvsdcProfileKind = CardProfileKind(
        name: "emv-qvsdc",
        summary: "EMV contactless payment card, Visa-style qVSDC (cryptogram in the GPO answer); test data only"
    ) { json, source in
        try EMVCard(profile: json, defaultKernel: .qvsdc, source: source)
    }

    /// The `emv-mchip` profile kind: applications default to Mastercard-style M/Chip.
    public static let mchipProfileKind = CardProfileKind(
        name: "emv-mchip",
        summary: "EMV contactless payment card, Mastercard-style M/Chip (GENERATE AC); test data only"
    ) { json, source in
        try EMVCard(profile: json, defaultKernel: .mchip, source: source)
    }

    /// Reads an `emv-qvsdc` or `emv-mchip` profile:
    ///
    /// ```json
    /// { "profile": "emv-qvsdc", "name": "test Visa qVSDC card", "uid": "08A1B2C4",
    ///   "issuerTestKey": "…16-64 bytes hex…",
    ///   "applications": [ {
    ///     "aid": "A0000000031010", "label": "TEST VISA", "priority": 1, "kernelIdentifier": "03",
    ///     "pdol": "9F66049F02069F03069F1A0295055F2A029A039C019F3704",
    ///     "aip": "0020", "ctq": "0000", "issuerApplicationData": "06010A03A00000", "cryptogram": "arqc",
    ///     "pan": "4761739001010119", "expiry": "281231", "panSequenceNumber": 1, "cardholderName": "TEST/CARD",
    ///     "data": { "9F07": "FF00" }, "gpoTags": ["57"],
    ///     "records": [ { "sfi": 1, "record": 1, "oda": true, "tags": ["5A", "5F24", "5F34"] },
    ///                  { "sfi": 2, "record": 1, "raw": "70…" } ] } ] }
    /// ```
    ///
    /// Per application: `aid`, `aip`, `issuerApplicationData`, `pan`, `expiry` (YYMMDD) and `records` are
    /// required; `cdol1` too for M/Chip. Optional: `label`, `priority` (0–15), `kernelIdentifier`, `kernel`
    /// (`qvsdc` / `mchip`, default from the profile kind), `pdol`, `ctq`, `cvmList`, `cryptogram` (`arqc`, `tc`,
    /// `aac`; default `arqc`), `selectStatus` / `processingOptionsStatus` (a status word to answer instead),
    /// `processingOptionsFormat` (1 or 2), `transactionCounter` (initial ATC), `panSequenceNumber` (0–99),
    /// `cardholderName`, `serviceCode` (3 digits, default 201), `data` (further primitive tags), `gpoTags` (tags
    /// added to a format 2 GPO answer).
    ///
    /// A record lists `tags` whose values come from the application's data: `5A` and `57` (built from `pan`,
    /// `expiry` and `serviceCode`), `5F24`, `5F34`, `5F20`, `8C` (`cdol1`), `8E` (`cvmList`) and `data`;
    /// or gives `raw` hex answered as it is (for a malformed record). Records flagged `oda` come first in each
    /// run of consecutive records; the AFL is derived from the records.
    ///
    /// - Throws: `ProximaError.malformedData` naming the JSON path.
    init(profile json: JSONValue, defaultKernel: Kernel, source: String = "") throws {
        var object = try StrictObject(json, at: "", errorCode: .malformedData)
        _ = object.value("profile")
        let name = try object.string("name")
        let technologyName =
            try object.optionalChoice("technology", CardProfiles.technologyNames) ?? CardTechnology.iso14443A.rawValue
        let uid = try CardProfiles.hex(&object, "uid", count: 1...10)
        let atr = try CardProfiles.optionalHex(&object, "atr", count: 0...33) ?? ScriptedCard.contactlessPseudoATR
        let ats = try CardProfiles.optionalHex(&object, "ats", count: 0...254) ?? []
        let key = try CardProfiles.hex(&object, "issuerTestKey", count: 16...64)
        let applications = try object.array("applications") { element, path in
            try Self.application(element, at: path, defaultKernel: defaultKernel, source: source)
        }
        guard !applications.isEmpty else { throw object.fail("applications", "expected at least one application") }
        try object.finish()
        self.init(
            name: name,
            technology: CardTechnology(rawValue: technologyName) ?? .iso14443A,
            uid: uid,
            atr: atr,
            ats: ats,
            issuerTestKey: key,
            applications: applications
        )
    }

    private static func application(_ json: JSONValue, at path: String, defaultKernel: Kernel, source: String) throws
        -> Application
    {
        var object = try StrictObject(json, at: path, errorCode: .malformedData)
        let aid = try CardProfiles.hex(&object, "aid", count: 5...16)
        let label = try object.optionalString("label") ?? ""
        guard label.utf8.count <= 16, label.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) else {
            throw object.fail("label", "expected at most 16 printable ASCII characters")
        }
        let priority = try object.optionalInteger("priority", in: 0...15).map { UInt8($0) }
        let kernelIdentifier = try CardProfiles.optionalHex(&object, "kernelIdentifier", count: 1...8)
        let kernel =
            try object.optionalChoice("kernel", Kernel.allCases.map(\.rawValue)).flatMap(Kernel.init) ?? defaultKernel
        let pdol = try dol(&object, "pdol", required: false)
        let cdol1 = try dol(&object, "cdol1", required: kernel == .mchip)
        let aip = try CardProfiles.hex(&object, "aip", count: 2...2)
        let ctq = try CardProfiles.optionalHex(&object, "ctq", count: 2...2)
        let cvmList = try CardProfiles.optionalHex(&object, "cvmList", count: 8...252)
        if let cvmList, cvmList.count % 2 != 0 {
            throw object.fail("cvmList", "expected 8 bytes of amounts followed by 2-byte rules")
        }
        let iad = try CardProfiles.hex(&object, "issuerApplicationData", count: 1...32)
        let decision =
            try object.optionalChoice("cryptogram", Decision.allCases.map(\.rawValue)).flatMap(Decision.init) ?? .arqc
        let selectStatus = try statusWord(&object, "selectStatus")
        let gpoStatus = try statusWord(&object, "processingOptionsStatus")
        let format = try object.optionalInteger("processingOptionsFormat", in: 1...2).map { Int($0) }
        let counter = try object.optionalInteger("transactionCounter", in: 0...65_534).map { UInt16($0) } ?? 0

        // The application's data objects, from which records are built.
        let pan = try object.string("pan")
        guard (12...19).contains(pan.count), pan.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw object.fail("pan", "expected 12 to 19 decimal digits (a public test PAN)")
        }
        let expiry = try object.string("expiry")
        guard expiry.count == 6, expiry.allSatisfy({ $0.isASCII && $0.isNumber }),
            let month = Int(expiry.dropFirst(2).prefix(2)), (1...12).contains(month)
        else { throw object.fail("expiry", "expected YYMMDD") }
        let serviceCode = try object.optionalString("serviceCode") ?? "201"
        guard serviceCode.count == 3, serviceCode.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw object.fail("serviceCode", "expected 3 digits")
        }
        var values: [TLVTag: [UInt8]] = [
            0x5A: packDigits(pan),
            0x57: packDigits(pan + "D" + expiry.prefix(4) + serviceCode + "00000000000"),
            0x5F24: packDigits(expiry),
        ]
        if let sequence = try object.optionalInteger("panSequenceNumber", in: 0...99) {
            values[0x5F34] = [UInt8(sequence / 10) << 4 | UInt8(sequence % 10)]
        }
        if let holder = try object.optionalString("cardholderName") {
            guard (2...26).contains(holder.utf8.count), holder.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) else {
                throw object.fail("cardholderName", "expected 2 to 26 printable ASCII characters")
            }
            values[0x5F20] = Array(holder.utf8)
        }
        if !cdol1.isEmpty { values[0x8C] = cdol1 }
        if let cvmList { values[0x8E] = cvmList }
        if let data = object.value("data") {
            let dataObject = try StrictObject(data, at: object.path(of: "data"), errorCode: .malformedData)
            for key in dataObject.keys {
                let keyPath = dataObject.path(of: key)
                guard let bytes = [UInt8](hex: key), let tag = TLVTag(bytes: bytes), !tag.isConstructed else {
                    throw ProximaError(.malformedData, "\(keyPath): \"\(key)\" is no primitive BER-TLV tag in hex")
                }
                guard let value = data[key] else { continue }
                values[tag] = try CardProfiles.decodeHex(value, in: dataObject, at: keyPath, count: 0...252)
            }
        }
        let oda = try object.value("oda").map { odaJSON in
            try ProfileAuthentication(odaJSON, at: object.path(of: "oda"), aid: aid, source: source)
        }
        if let oda { values.merge(oda.knownValues) { _, new in new } }
        let decoder = object
        func lookup(_ element: JSONValue, _ elementPath: String) throws -> TLV {
            let text = try decoder.decodeString(element, at: elementPath)
            guard let bytes = [UInt8](hex: text), let tag = TLVTag(bytes: bytes) else {
                throw ProximaError(.malformedData, "\(elementPath): \"\(text)\" is no BER-TLV tag in hex")
            }
            guard let value = values[tag] else {
                throw ProximaError(
                    .malformedData,
                    "\(elementPath): tag \(tag) has no value in this application (add it to \"data\")"
                )
            }
            return TLV(tag: tag, value: value)
        }
        let gpoObjects = try object.optionalArray("gpoTags", lookup) ?? []
        // Records flagged for ODA are built first: the ICC certificate signs them, and the other records carry it.
        let pending = try object.array("records") { element, recordPath in
            var record = try StrictObject(element, at: recordPath, errorCode: .malformedData)
            let sfi = UInt8(try record.integer("sfi", in: 1...30))
            let number = UInt8(try record.integer("record", in: 1...255))
            let flagged = try record.bool("oda", default: false)
            let raw = try CardProfiles.optionalHex(&record, "raw", count: 1...254)
            if raw != nil, record.has("tags") { throw record.fail("tags", "give either \"tags\" or \"raw\"") }
            let tags: [(JSONValue, String)] = raw != nil ? [] : try record.array("tags") { ($0, $1) }
            try record.finish()
            return (sfi: sfi, number: number, oda: flagged, raw: raw, tags: tags, path: recordPath)
        }
        func build(
            _ entry: (sfi: UInt8, number: UInt8, oda: Bool, raw: [UInt8]?, tags: [(JSONValue, String)], path: String)
        )
            throws -> Record
        {
            var content = entry.raw ?? []
            if entry.raw == nil {
                let objects = try entry.tags.map { try lookup($0.0, $0.1) }
                content = TLV(tag: 0x70, children: objects).bytes
                guard content.count <= 254 else {
                    throw ProximaError(
                        .malformedData,
                        "\(entry.path).tags: the record template has \(content.count) bytes; at most 254 fit"
                    )
                }
            }
            return Record(
                shortFileIdentifier: entry.sfi,
                number: entry.number,
                offlineAuthentication: entry.oda,
                content: content
            )
        }
        var built: [Int: Record] = [:]
        for (offset, entry) in pending.enumerated() where entry.oda { built[offset] = try build(entry) }
        if let oda {
            let signed = built.values.sorted {
                ($0.shortFileIdentifier, $0.number) < ($1.shortFileIdentifier, $1.number)
            }
            var staticData = signed.flatMap { record -> [UInt8] in
                guard record.shortFileIdentifier <= 10, let template = try? TLV.decode(record.content) else {
                    return record.content
                }
                return template.value
            }
            if oda.signsApplicationInterchangeProfile { staticData += aip }
            values.merge(try oda.certificates(pan: pan, staticData: staticData, at: object.path(of: "oda"))) { _, new in
                new
            }
        }
        for (offset, entry) in pending.enumerated() where !entry.oda { built[offset] = try build(entry) }
        let records = pending.indices.compactMap { built[$0] }
        try checkRecords(records, in: object)
        try object.finish()
        var application = Application(
            identifier: aid,
            label: label,
            priority: priority,
            kernelIdentifier: kernelIdentifier,
            kernel: kernel,
            processingOptionsDOL: pdol,
            cdol1: cdol1,
            applicationInterchangeProfile: aip,
            cardTransactionQualifiers: ctq,
            issuerApplicationData: iad,
            decision: decision,
            selectStatus: selectStatus,
            processingOptionsStatus: gpoStatus,
            processingOptionsFormat: format,
            processingOptionsObjects: gpoObjects,
            records: records,
            initialTransactionCounter: counter
        )
        application.authentication = oda?.card
        return application
    }

    /// Records are unique by SFI and number, and within each run of consecutive records those flagged for
    /// offline data authentication come first (the AFL counts them from the first record).
    private static func checkRecords(_ records: [Record], in object: StrictObject) throws {
        var seen = Set<[UInt8]>()
        for record in records where !seen.insert([record.shortFileIdentifier, record.number]).inserted {
            throw object.fail("records", "SFI \(record.shortFileIdentifier) record \(record.number) appears twice")
        }
        let sorted = records.sorted { ($0.shortFileIdentifier, $0.number) < ($1.shortFileIdentifier, $1.number) }
        for (previous, record) in zip(sorted, sorted.dropFirst())
        where previous.shortFileIdentifier == record.shortFileIdentifier && previous.number + 1 == record.number
            && record.offlineAuthentication && !previous.offlineAuthentication
        {
            throw object.fail(
                "records",
                "SFI \(record.shortFileIdentifier) record \(record.number) is flagged \"oda\" after an unflagged record"
            )
        }
    }

    /// A DOL member: hex tag-length pairs that parse and ask for at most 252 bytes (one short command).
    private static func dol(_ object: inout StrictObject, _ key: String, required: Bool) throws -> [UInt8] {
        let bytes =
            required
            ? try CardProfiles.hex(&object, key, count: 2...252)
            : try CardProfiles.optionalHex(&object, key, count: 0...252) ?? []
        do {
            _ = try DataObjectList(bytes: bytes, maximumTotalLength: 252)
        } catch let error as ProximaError {
            throw object.fail(key, error.reason)
        }
        return bytes
    }

    private static func statusWord(_ object: inout StrictObject, _ key: String) throws -> UInt16? {
        try CardProfiles.optionalHex(&object, key, count: 2...2).map { UInt16($0[0]) << 8 | UInt16($0[1]) }
    }

    /// Digits (and `D`) packed two per byte, padded with `F` to whole bytes.
    private static func packDigits(_ text: String) -> [UInt8] {
        var nibbles = text.compactMap { $0.hexDigitValue.map(UInt8.init) }
        if nibbles.count % 2 == 1 { nibbles.append(0x0F) }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }
}
