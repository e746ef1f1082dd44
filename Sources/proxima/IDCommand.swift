import Foundation
import MobileDocumentCapability
import Proxima
import ProximaCore
import ProximaKernel
import ProximaProcessorSandbox

/// `proxima id`: one ID check (ISO/IEC 18013-5 mDL) on the configured readers, verified against the manifest's
/// IACA trust anchors.
enum IDCommand {
    static let defaultElements = ["family_name", "given_name", "age_over_21", "portrait"]

    static let command = Command(
        name: "id",
        summary: "Check one mobile driving licence (ISO/IEC 18013-5 mDL) on the configured readers.",
        details: """
            Reads the holder's mDL over NFC, verifies it (issuer chain to a configured IACA, issuer signature, every
            returned element's digest, validity, docType, device authentication) and prints "docType: ...",
            "issuer: <the IACA's subject>", one line per element "name: value" (portrait: <N bytes jpeg>), then
            "verified: issuer, device". Exits 0 only when everything verified, 1 naming the failing check.
            With --display the elements go through the lane's attendant display (this terminal), as an app's
            display request does.
            """,
        options: [
            .value("lane", "L", help: "The lane to read on.", defaultDescription: "the first lane"),
            .value(
                "reader",
                "NAME",
                help: "Read on this reader only, by its exact name or id (lane wiring checks, support)."
            ),
            .value(
                "elements",
                "LIST",
                help: "Comma-separated org.iso.18013.5.1 element identifiers to ask for.",
                defaultDescription: defaultElements.joined(separator: ",")
            ),
            .flag("display", help: "Show the elements on the lane's attendant display (here) as a display request."),
            .value(
                "token",
                "JWT",
                help: "The reader token.",
                defaultDescription: "$ID_TOKEN, else a sandbox token issued with the manifest's payment test key"
            ),
            .value("timeout", "S", help: "How long to wait for a reader and a holder, in seconds.", default: "60"),
        ],
        notes: "The element values are the holder's: print them only where the holder's data may go. Nothing of "
            + "them is logged.",
        action: { try await run($0) }
    )

    static func run(_ args: Arguments) async throws -> ExitCode {
        let timeout = try args.integer("timeout", in: 1...3600)
        let manifest = try CLI.loadManifest(args.configPath)
        let names = try elements(args.value("elements"))
        let request = DocumentRequest(elements: [
            DocumentRequest.mDLNamespace: names.reduce(into: [:]) { $0[$1] = false }
        ])
        let token: String
        if let raw = args.value("token") ?? ProcessInfo.processInfo.environment["ID_TOKEN"] {
            token = raw
        } else {
            token = try PaymentProcessorSandbox(manifest: manifest).issueToken(merchantID: PSPCommand.defaultMerchant)
                .rawValue
        }
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
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
                let (id, readerLane) = try await PayCommand.resolveReader(named: name, in: kernel)
                pinned = id
                lane = lane ?? readerLane
            }
            guard let service = MobileDocumentReader(kernel: kernel, lane: lane).documentService else {
                _ = try MobileDocumentSettings(manifest: manifest)  // throws the reason
                throw UsageError("no ID verification on this manifest")
            }
            let display = args.flag("display")
            if display {
                service.kernel.laneDisplays.register(
                    { content in
                        for item in content.items { print("\(item.label): \(item.text ?? "")") }
                        flushStandardOutput()
                    },
                    for: service.lane
                )
            }
            do {
                let outcome = try await service.read(
                    [request],
                    token: token,
                    delivery: display ? .display : .data,
                    options: DocumentReadOptions(pinnedReader: pinned, timeout: .seconds(timeout))
                )
                if let exchange = outcome.exchange {
                    for line in lines(exchange, order: names) { print(line) }
                }
                return .success
            } catch let error as MobileDocumentError {
                printError("proxima id: not verified: \(error.code): \(error.reason)")
                return .failure
            } catch let error as MobileDocumentServiceError {
                printError("proxima id: \(error.code): \(error.reason)")
                return .failure
            }
        }
    }

    /// The `--elements` list, checked: identifiers of letters, digits and `_`, none twice.
    static func elements(_ list: String?) throws -> [String] {
        guard let list else { return defaultElements }
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !names.isEmpty,
            names.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } })
        else {
            throw UsageError("--elements must be comma-separated element identifiers such as family_name,age_over_21")
        }
        if let twice = names.enumerated().first(where: { names[..<$0.offset].contains($0.element) }) {
            throw UsageError("--elements names \(twice.element) twice")
        }
        return names
    }

    /// The lines of a verified read, the elements in the order asked: what the attendant display shows.
    static func lines(_ exchange: DocumentExchange, order: [String]) -> [String] {
        let items = MobileDocumentService.displayContent(of: exchange).items
        let elements = order.compactMap { name in items.first { $0.label == name } }
        let head = items.filter { $0.label == "docType" || $0.label == "issuer" }
        let tail = items.filter { $0.label == "verified" }
        return (head + elements + tail).map { "\($0.label): \($0.text ?? "")" }
    }
}
