import Foundation
import Proxima
import ProximaProcessorSandbox
import ProximaCore
import ProximaKernel

/// `proxima pay`: one payment read on the configured readers, through the Apple-shaped API.
enum PayCommand {
    static let help = """
        USAGE: proxima pay [--config FILE] [--lane L | --reader NAME] --amount 29.99 --currency USD
                           [--type purchase|refund] [--token JWT] [--merchant ID] [--timeout SECONDS]

        Reads one card for a payment on the manifest's readers and prints the masked card (brand, last four
        digits, expiry), the outcome and the encrypted card data for the processor (base64, on its own line).

        OPTIONS:
          --lane L          The lane to read on (default: the first lane).
          --reader NAME     Read on this reader only, by its exact name or id (lane wiring checks, support).
          --amount A        The amount, in the currency's major unit (29.99).
          --currency C      ISO 4217 alphabetic code (USD, EUR, JPY, …).
          --type T          purchase (default) or refund.
          --token JWT       The processor's reader token (default: $PSP_TOKEN, else a sandbox token issued
                            with the manifest's test key — see 'proxima psp token').
          --merchant ID     The merchant id of a sandbox token (default: merchant-test-001).
          --timeout S       How long to wait for a reader and a card (default 60).

        The account is linked on first use with the token (as PaymentCardReader.linkAccount does).
        """

    static func run(_ words: [String]) async throws -> ExitCode {
        let args = try Arguments(
            words,
            valued: ["config", "lane", "reader", "amount", "currency", "type", "token", "merchant", "timeout"],
            flags: ["help"]
        )
        if args.flag("help") {
            print(help)
            return .success
        }
        guard args.positionals.isEmpty else { throw UsageError("pay takes no arguments") }
        guard let amountText = args.value("amount"), let amount = Decimal(string: amountText, locale: nil) else {
            throw UsageError("--amount is required, as a decimal number such as 29.99")
        }
        guard let currency = args.value("currency") else { throw UsageError("--currency is required (USD, EUR, …)") }
        let typeName = args.value("type") ?? "purchase"
        guard let type = PaymentCardTransactionRequest.TransactionType(rawValue: typeName) else {
            throw UsageError("--type must be purchase or refund, got \"\(typeName)\"")
        }
        let timeout = try args.integer("timeout", default: 60, in: 1...3600)
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
            let result = try await session.readPaymentCard(
                PaymentCardTransactionRequest(amount: amount, currencyCode: currency, type: type)
            )
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
