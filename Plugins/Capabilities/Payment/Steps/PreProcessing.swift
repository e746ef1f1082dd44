internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    /// The terminal and transaction data objects (EMV Book 3 Annex A formats); fails when a value does not fit.
    static func terminalData(
        for transaction: EMVTransaction,
        settings: TerminalSettings,
        unpredictableNumber: [UInt8]
    ) throws -> [TLVTag: [UInt8]] {
        func numeric(_ value: Int64, digits: Int, _ name: String) throws -> [UInt8] {
            guard let bcd = BCD.numeric(value, digits: digits) else {
                throw PaymentError(
                    .invalidTransaction,
                    step: "transaction data",
                    "\(name) \(value) does not fit \(digits) decimal digits"
                )
            }
            return bcd
        }
        func ascii(_ text: String) -> [UInt8] { Array(text.utf8.filter { (0x20..<0x7F).contains($0) }) }
        guard let date = transaction.date.dateBCD, let time = transaction.date.timeBCD else {
            throw PaymentError(
                .invalidTransaction,
                step: "transaction data",
                "transaction date \(transaction.date) is not a valid date and time in 2000-2099"
            )
        }
        var data = settings.additionalData
        data.reserveCapacity(data.count + 24)  // the ~20 set below, without regrowing
        data[0x9F02] = try numeric(transaction.amountAuthorised, digits: 12, "Amount, Authorised")
        data[0x9F03] = try numeric(transaction.amountOther, digits: 12, "Amount, Other")
        data[0x5F2A] = try numeric(Int64(transaction.currencyCode), digits: 4, "currency code")
        data[0x5F36] = try numeric(Int64(transaction.currencyExponent), digits: 2, "currency exponent")
        data[0x9F1A] = try numeric(Int64(transaction.countryCode ?? settings.countryCode), digits: 4, "country code")
        data[0x9A] = date
        data[0x9F21] = time
        data[0x9C] = [transaction.type.rawValue]
        data[0x9F37] = unpredictableNumber
        data[0x9F35] = [settings.terminalType]
        data[0x9F33] = settings.terminalCapabilities
        data[0x9F40] = settings.additionalTerminalCapabilities
        data[0x95] = [0x00, 0x00, 0x00, 0x00, 0x00]
        data[0x9F15] = try numeric(Int64(settings.merchantCategoryCode), digits: 4, "merchant category code")
        data[0x9F1C] = ascii(settings.terminalIdentification)
        if !settings.merchantNameAndLocation.isEmpty { data[0x9F4E] = ascii(settings.merchantNameAndLocation) }
        if let merchant = settings.merchantIdentifier { data[0x9F16] = ascii(merchant) }
        // The TTQ of the candidate's combination replaces this before GET PROCESSING OPTIONS.
        data[0x9F66] = DataObjectList.fitted(settings.terminalTransactionQualifiers, length: 4)
        return data
    }
}

extension TerminalApplication {
    /// The Entry Point Pre-Processing Indicators of this combination for `transaction` (EMV Book B §3.1.1.1 to
    /// §3.1.1.12), with the limits of the transaction currency (the terminal's CVM required and floor limits
    /// where the combination has none).
    func preProcessing(_ transaction: EMVTransaction, settings: TerminalSettings) -> EntryPointIndicators {
        let amount = transaction.amountAuthorised
        var limits = self.limits[transaction.currencyCode] ?? ReaderLimits()
        limits.cvmRequired = limits.cvmRequired ?? settings.cvmRequiredLimit
        var indicators = EntryPointIndicators()
        indicators.limits = limits
        // §3.1.1.2: the copy of the TTQ with byte 2 bits 8-7 cleared.
        var ttq = DataObjectList.fitted(
            terminalTransactionQualifiers ?? settings.terminalTransactionQualifiers,
            length: 4
        )
        ttq[1] &= 0x3F
        // §3.1.1.3: status check on one unit of the currency.
        var unit: Int64 = 1
        for _ in 0..<max(0, transaction.currencyExponent) { unit *= 10 }
        if statusCheckSupported && amount == unit { indicators.statusCheckRequested = true }
        // §3.1.1.4: zero amount.
        if amount == 0 {
            if zeroAmountAllowed {
                indicators.zeroAmount = true
            } else {
                indicators.contactlessApplicationNotAllowed = true
            }
        }
        // §3.1.1.5: at or above the contactless transaction limit.
        if let limit = limits.contactlessTransaction, amount >= limit {
            indicators.contactlessTransactionLimitExceeded = true
            indicators.contactlessApplicationNotAllowed = true
        }
        // §3.1.1.6 and §3.1.1.7: above the reader floor limit, else above the terminal floor limit (9F1B).
        if let floor = limits.floor ?? settings.terminalFloorLimit, amount > floor {
            indicators.floorLimitExceeded = true
        }
        // §3.1.1.8: at or above the CVM required limit.
        if let limit = limits.cvmRequired, amount >= limit { indicators.cvmRequiredLimitExceeded = true }
        // §3.1.1.9 to §3.1.1.12: the TTQ bits.
        if indicators.floorLimitExceeded || indicators.statusCheckRequested { ttq[1] |= 0x80 }
        if indicators.zeroAmount {
            if ttq[0] & 0x08 != 0 {
                indicators.contactlessApplicationNotAllowed = true  // offline-only reader
            } else {
                ttq[1] |= 0x80
            }
        }
        if indicators.cvmRequiredLimitExceeded { ttq[1] |= 0x40 }
        indicators.terminalTransactionQualifiers = ttq
        return indicators
    }
}

extension DataObjectList {
    /// `value` padded with trailing zeros or truncated to `length` bytes.
    static func fitted(_ value: [UInt8], length: Int) -> [UInt8] {
        value.count >= length ? Array(value.prefix(length)) : value + Array(repeating: 0, count: length - value.count)
    }
}
