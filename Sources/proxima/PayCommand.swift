import Foundation
import PaymentCapability
import Proxima
import ProximaCore
import ProximaKernel
import ProximaProcessorSandbox

/// `proxima pay`: one payment read on the configured readers, through the Apple-shaped API.
enum PayCommand {
    static let command = Command(
        name: "pay",
        summary: "Read one card for a payment on the configured readers.",
        details: """
            Reads one card for a payment on the manifest's readers and prints the masked card (brand, last four
            digits, expiry), the outcome and the encrypted card data for the processor (base64, on its own line).
            """,
        options: [
            .value("lane", "L", help: "The lane to read on.", defaultDescription: "the first lane"),
            .value(
                "reader",
                "NAME",
                help: "Read on this reader only, by its exact name or id (lane wiring checks, support)."
            ),
            .value("amount", "A", help: "The amount, in the currency's major unit (29.99).", required: true),
            .value("currency", "C", help: "ISO 4217 alphabetic code (USD, EUR, JPY, …).", required: true),
            .value("type", "T", help: "purchase or refund.", default: "purchase"),
            .value(
                "token",
                "JWT",
                help: "The processor's reader token.",
                defaultDescription:
                    "$PSP_TOKEN, else a sandbox token issued with the manifest's test key — see 'proxima psp token'"
            ),
            .value("merchant", "ID", help: "The merchant id of a sandbox token.", default: PSPCommand.defaultMerchant),
            .value("timeout", "S", help: "How long to wait for a reader and a card, in seconds.", default: "60"),
            .value(
                "vas",
                "ID",
                help: "Also read this merchant's loyalty pass first, in the same tap (repeatable; see 'proxima vas').",
                repeatable: true
            ),
            .flag(
                "offline",
                help: "Store the read for later forwarding (store and forward) instead of printing its envelope."
            ),
        ],
        notes: "The account is linked on first use with the token (as PaymentCardReader.linkAccount does).",
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        guard let amountText = args.value("amount") else {
            throw UsageError("--amount is required, as a decimal number such as 29.99")
        }
        guard let currency = args.value("currency") else { throw UsageError("--currency is required (USD, EUR, …)") }
        let amount = try strictAmount(amountText, currency: currency)
        let typeName = args.string("type") ?? "purchase"
        guard let type = PaymentCardTransactionRequest.TransactionType(rawValue: typeName) else {
            throw UsageError("--type must be purchase or refund, got \"\(typeName)\"")
        }
        let timeout = try args.integer("timeout", in: 1...3600)
        let manifest = try CLI.loadManifest(args.configPath)
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let token: PaymentCardReader.Token
        if let raw = args.value("token") ?? ProcessInfo.processInfo.environment["PSP_TOKEN"] {
            token = PaymentCardReader.Token(rawValue: raw)
        } else {
            token = try PaymentProcessorSandbox(manifest: manifest)
                .issueToken(merchantID: args.value("merchant") ?? PSPCommand.defaultMerchant)
        }

        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await kernel.run() }
            defer { group.cancelAll() }
            var lane = try args.value("lane").map { name in
                guard manifest.lanes.contains(where: { $0.id.rawValue == name }) else {
                    throw UsageError("lane \"\(name)\" is not in the manifest")
                }
                return LaneID(name)
            }
            var pinned: ReaderID? = nil
            if let name = args.value("reader") {
                let (id, readerLane) = try await resolveReader(named: name, in: kernel)
                pinned = id
                lane = lane ?? readerLane
            }
            let options = PaymentCardReader.Options(
                readTimeout: .seconds(timeout),
                prepareTimeout: .seconds(timeout),
                pinnedReader: pinned
            )
            let reader = PaymentCardReader(kernel: kernel, lane: lane, options: options)
            if try await !reader.isAccountLinked(using: token) {
                try await reader.linkAccount(using: token)
            }
            let session = try await PaymentCardReaderSession(reader: reader, token: token)
            try await session.prepare()
            let events = Task {
                for await event in reader.events { printError("event: \(event)") }
            }
            defer { events.cancel() }
            let request = PaymentCardTransactionRequest(amount: amount, currencyCode: currency, type: type)
            if args.flag("offline") {
                return try await StoreCommand.payOffline(reader, request)
            }
            let passes = args.values("vas")
            let result: PaymentCardReadResult
            if passes.isEmpty {
                result = try await session.readPaymentCard(request)
            } else {
                let vasRequest = VASRequest(
                    vasMerchants: passes.map { VASRequest.Merchant(id: $0, localizedName: $0) },
                    localizedVASType: "loyalty"
                )
                result = try await session.readPaymentCard(request, vasRequest: vasRequest)
                for line in result.vasReadResult.map(VASCommand.lines) ?? [] { print(line) }
            }
            print("outcome: \(result.outcome.rawValue)")
            if let card = result.generalCardData { print("card: \(card)") }
            if let aid = result.applicationTypeIdentifier { print("application: \(aid)") }
            print("lane: \(result.lane)  reader: \(result.device)  transaction: \(result.id)")
            if result.isPINRequired { print("the card asks for online PIN") }
            if let data = result.paymentCardData {
                print("paymentCardData (encrypted to the processor; expires \(result.paymentCardDataExpiresAt)):")
                print(data)
            }
            return .success
        }
    }

    /// `--amount` read by the one amount parser of the payment service (a plain decimal number with at most the
    /// currency's minor-unit digits), as the `Decimal` of the request.
    static func strictAmount(_ text: String, currency code: String) throws -> Decimal {
        guard let currency = ISO4217Currency(alphabeticCode: code) else {
            throw UsageError("--currency \"\(code)\" is not an active ISO 4217 currency code (such as USD, EUR, JPY)")
        }
        let units: Int64
        do {
            units = try currency.minorUnits(parsing: text)
        } catch {
            throw UsageError("--amount: \(error.reason)")
        }
        return Decimal(sign: .plus, exponent: -currency.minorUnits, significand: Decimal(units))
    }

    /// The kernel id and first lane of the reader whose exact name or id is `name`.
    static func resolveReader(named name: String, in kernel: Kernel) async throws -> (ReaderID, LaneID?) {
        // Discovering transports report their readers shortly after start; wait for them briefly.
        await ReadersCommand.waitForReaders(kernel)
        let readers = await kernel.snapshot().readers
        guard let match = readers.first(where: { $0.info.name == name || $0.info.id.rawValue == name }) else {
            let known = readers.map { "\"\($0.info.name)\"" }.joined(separator: ", ")
            throw UsageError("no reader named \"\(name)\"; present: \(known.isEmpty ? "none" : known)")
        }
        return (match.info.id, match.lanes.first)
    }
}
