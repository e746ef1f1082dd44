internal import Foundation
package import PaymentCapability
package import ProximaCore
package import ProximaKernel

/// The store-and-forward settings of a manifest: `capabilities.storeAndForward`, checked strictly (unknown keys
/// are errors naming their JSON path). The limits bound what the merchant risks: every offline read is one the
/// issuer has not approved.
///
/// ```json
/// "storeAndForward": {
///   "enabled": true,
///   "maxTransactionAmount": { "USD": "100.00", "EUR": "100.00" },
///   "maxStoredAmount": { "USD": "2000.00", "EUR": "2000.00" },
///   "maxStoredCount": 500,
///   "onlineWithinHours": 24,
///   "sessionHours": 24,
///   "storedReadValidityHours": 168,
///   "allowedBrands": ["Visa", "Mastercard"],
///   "allowRefunds": false,
///   "deletionTokens": "processor"
/// }
/// ```
///
/// - `enabled` (default `true`): `false` refuses every offline session.
/// - `maxStoredAmount` (required): per ISO 4217 currency, the most the stored reads of that currency may add up
///   to (a decimal string with the currency's minor-unit digits). A currency not listed is refused offline.
/// - `maxTransactionAmount` (optional): per currency, the most one offline read may be.
/// - `maxStoredCount` (default 1000, 1…1,000,000): the most reads stored at once, all currencies.
/// - `onlineWithinHours` (default 24, as Apple): an offline session starts only when the processor was reached
///   within this window (a reader token issued, or a batch resolved, that recently).
/// - `sessionHours` (default 24, 1…168): how long an offline session reads after it was prepared.
/// - `storedReadValidityHours` (default 168, 1…720): how long a stored envelope stays valid for the processor
///   (its `expiresAt`): forward the batch before.
/// - `allowedBrands` (default all): the brands accepted offline (`Visa`, `Mastercard`, …), exact names.
/// - `allowRefunds` (default `false`): refunds are refused offline unless set.
/// - `deletionTokens` (default `"processor"`): `"processor"` deletes a batch only with the processor's ES256
///   deletion token for it; `"app"` lets ``PaymentCardReaderStore`` delete a batch on the app's word (the sketch's
///   `delete(using: batch.deletionToken)` without a processor token): the weaker mode, for processors that issue none.
package struct StoreAndForwardSettings: Sendable {
    package static let capabilityID: CapabilityID = "storeAndForward"
    package static let jsonPath = "capabilities.storeAndForward"

    package enum DeletionMode: String, Sendable { case processor, app }

    /// One currency's limits, in minor units.
    package struct CurrencyLimit: Hashable, Sendable {
        package var currency: ISO4217Currency
        package var maxStored: Int64
        package var maxTransaction: Int64?
    }

    package var enabled = true
    /// By alphabetic code.
    package var currencies: [String: CurrencyLimit] = [:]
    package var maxStoredCount = 1000
    package var onlineWithin: Duration = .seconds(24 * 3600)
    package var session: Duration = .seconds(24 * 3600)
    package var storedReadValidity: Duration = .seconds(168 * 3600)
    /// `nil`: every brand.
    package var allowedBrands: [String]?
    package var allowRefunds = false
    package var deletionTokens = DeletionMode.processor

    /// Settings with every limit given in code (tests, benchmarks).
    package init(currencies: [String: CurrencyLimit]) { self.currencies = currencies }

    /// Reads and checks the settings object found at `path`.
    /// - Throws: `ProximaError.invalidManifest` whose `jsonPath` names the problem.
    package init(json: JSONValue, path: String) throws {
        var object = try StrictObject(json, at: path)
        enabled = try object.bool("enabled", default: true)
        let storedPath = object.path(of: "maxStoredAmount")
        let stored = try Self.amounts(
            try object.required("maxStoredAmount", expected: "an object of ISO 4217 code → amount string"),
            at: storedPath
        )
        guard !stored.isEmpty else {
            throw ProximaError(.invalidManifest, "list at least one currency accepted offline", jsonPath: storedPath)
        }
        let transactionPath = object.path(of: "maxTransactionAmount")
        let perTransaction = try object.value("maxTransactionAmount").map { try Self.amounts($0, at: transactionPath) }
        for (code, limit) in perTransaction ?? [:] where stored[code] == nil {
            _ = limit
            throw ProximaError(
                .invalidManifest,
                "\(code) has a transaction limit but no maxStoredAmount, so it is refused offline anyway",
                jsonPath: "\(transactionPath).\(code)"
            )
        }
        for (code, entry) in stored {
            let maxTransaction = perTransaction?[code]?.1
            if let maxTransaction, maxTransaction > entry.1 {
                throw ProximaError(
                    .invalidManifest,
                    "\(entry.0.format(minorUnitAmount: maxTransaction)) is above maxStoredAmount.\(code) "
                        + entry.0.format(minorUnitAmount: entry.1),
                    jsonPath: "\(transactionPath).\(code)"
                )
            }
            currencies[code] = CurrencyLimit(currency: entry.0, maxStored: entry.1, maxTransaction: maxTransaction)
        }
        maxStoredCount = Int(try object.optionalInteger("maxStoredCount", in: 1...1_000_000) ?? 1000)
        onlineWithin = .seconds(try object.optionalInteger("onlineWithinHours", in: 1...168) ?? 24 * 1) * 3600
        session = .seconds(try object.optionalInteger("sessionHours", in: 1...168) ?? 24) * 3600
        storedReadValidity = .seconds(try object.optionalInteger("storedReadValidityHours", in: 1...720) ?? 168) * 3600
        let decoder = object
        let brandsPath = object.path(of: "allowedBrands")
        allowedBrands = try object.optionalArray("allowedBrands") { value, elementPath in
            try decoder.decodeString(value, at: elementPath)
        }
        if let brands = allowedBrands, brands.isEmpty {
            throw ProximaError(
                .invalidManifest,
                "an empty list refuses every card; leave allowedBrands out to accept every brand",
                jsonPath: brandsPath
            )
        }
        allowRefunds = try object.bool("allowRefunds", default: false)
        if let mode = try object.optionalChoice("deletionTokens", ["processor", "app"]) {
            deletionTokens = DeletionMode(rawValue: mode) ?? .processor
        }
        try object.finish()
    }

    /// `{ "USD": "100.00" }` → currency and minor units, in document order.
    private static func amounts(_ json: JSONValue, at path: String) throws -> [String: (ISO4217Currency, Int64)] {
        guard case .object(let members) = json else {
            throw ProximaError(
                .invalidManifest,
                "expected an object of ISO 4217 code → amount string, found \(json.typeName)",
                jsonPath: path
            )
        }
        var result: [String: (ISO4217Currency, Int64)] = [:]
        for member in members {
            let memberPath = "\(path).\(member.key)"
            guard let currency = ISO4217Currency(alphabeticCode: member.key) else {
                throw ProximaError(
                    .invalidManifest,
                    "\"\(member.key)\" is not an active ISO 4217 currency code",
                    jsonPath: memberPath
                )
            }
            guard case .string(let text) = member.value, let amount = Decimal(string: text, locale: nil),
                text.utf8.allSatisfy({ (48...57).contains($0) || $0 == 46 })
            else {
                throw ProximaError(
                    .invalidManifest,
                    "expected an amount as a decimal string such as \"100.00\", found \(member.value.typeName)",
                    jsonPath: memberPath
                )
            }
            do {
                result[member.key] = (currency, try currency.minorUnitAmount(of: amount))
            } catch {
                throw ProximaError(.invalidManifest, error.reason, jsonPath: memberPath)
            }
        }
        return result
    }

    /// The settings of `manifest`.
    /// - Throws: ``StoreAndForwardError`` `notAllowed` when the block is missing or invalid.
    package init(manifest: Manifest) throws(StoreAndForwardError) {
        let file = manifest.sourcePath ?? "the manifest"
        guard let json = manifest.capabilities[Self.capabilityID] else {
            throw StoreAndForwardError(
                .notAllowed,
                "\(file) has no capabilities.storeAndForward block: add one with maxStoredAmount to store reads "
                    + "offline (see Docs/store-and-forward.md)"
            )
        }
        do {
            try self.init(json: json, path: Self.jsonPath)
        } catch let error as ProximaError {
            throw StoreAndForwardError(.notAllowed, "\(file): \(error.pathAndReason)", underlying: error)
        } catch {
            throw StoreAndForwardError(.notAllowed, "\(file): \(error)", underlying: error)
        }
    }

    /// The capability type the built-in registry holds, whose validator is this initialiser.
    package static let capabilityType = CapabilityType(
        id: capabilityID,
        summary: "store and forward: offline payment reads in a signed SQLite store, batches and limits"
    ) { settings, path, _ in
        _ = try StoreAndForwardSettings(json: settings, path: path)
    }
}
