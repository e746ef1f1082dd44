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
        // Book B §3.1.1: the configured TTQ, then "online cryptogram required" for a zero amount (§3.1.1.11) and
        // "CVM required" at or above the reader CVM required limit (§3.1.1.8).
        var ttq = DataObjectList.fitted(settings.terminalTransactionQualifiers, length: 4)
        if transaction.amountAuthorised == 0 { ttq[1] |= 0x80 }
        if let limit = settings.cvmRequiredLimit, transaction.amountAuthorised >= limit { ttq[1] |= 0x40 }
        data[0x9F66] = ttq
        return data
    }
}

extension DataObjectList {
    /// `value` padded with trailing zeros or truncated to `length` bytes.
    static func fitted(_ value: [UInt8], length: Int) -> [UInt8] {
        value.count >= length ? Array(value.prefix(length)) : value + Array(repeating: 0, count: length - value.count)
    }
}
