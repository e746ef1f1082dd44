internal import ProximaCore

/// The Proximity Payment System Environment directory a card returns to SELECT `2PAY.SYS.DDF01`
/// (EMV Contactless Book B §3.3.2, Table 3-2): FCI template `6F` → `A5` → `BF0C` → one Directory Entry `61` per
/// application, each with ADF Name `4F`, Application Label `50`, Application Priority Indicator `87` and Kernel
/// Identifier `9F2A`.
public struct PaymentDirectory: Hashable, Sendable {
    /// One Directory Entry (`61`).
    public struct Entry: Hashable, Sendable {
        /// ADF Name (`4F`), 5–16 bytes.
        public var applicationIdentifier: [UInt8]
        /// Application Label (`50`), printable ASCII kept; empty when absent.
        public var label: String
        /// Application Priority Indicator (`87`) bits 4–1; `nil` when absent or 0 (lowest).
        public var priority: Int?
        /// Kernel Identifier (`9F2A`) as the card sent it; `nil` when absent.
        public var kernelIdentifier: [UInt8]?
        /// Position among the directory's entries, from 0.
        public var order: Int

        /// Whether this entry comes before `other` by priority (1 first, absent last), then directory order.
        public func precedes(_ other: Entry) -> Bool {
            switch (priority, other.priority) {
            case (let x?, let y?) where x != y: x < y
            case (.some, .none): true
            case (.none, .some): false
            default: order < other.order
            }
        }
    }

    /// The usable entries in the terminal's order of preference (EMV Book B §3.3.3.2): Application Priority
    /// Indicator 1 first, absent or 0 last, ties in directory order.
    public var prioritizedEntries: [Entry] { entries.sorted { $0.precedes($1) } }

    /// `2PAY.SYS.DDF01`.
    public static let name: [UInt8] = Array("2PAY.SYS.DDF01".utf8)

    /// The usable entries, in directory order.
    public var entries: [Entry]
    /// Entries skipped as EMV Book B §3.3.2.5 A asks (no or bad ADF Name), as "entry 2: …"; never card data.
    public var skipped: [String]

    /// Parses the FCI of SELECT PPSE.
    ///
    /// - Throws: ``PaymentError/Code/cardReadFailed`` at step `SELECT PPSE` when the answer is no well-formed
    ///   `6F` template with `A5` / `BF0C`. A single bad entry is skipped, not fatal.
    public init(fci: [UInt8]) throws {
        let step = "SELECT PPSE"
        let template = try CardAnswer.template(fci, step: step, expecting: [0x6F], what: "FCI")
        guard let proprietary = template.child(0xA5) else {
            throw CardAnswer.failure(step, "FCI has no proprietary template (A5)")
        }
        guard let directory = proprietary.child(0xBF0C) else {
            throw CardAnswer.failure(step, "FCI has no issuer discretionary data (A5 / BF0C)")
        }
        var entries: [Entry] = []
        var skipped: [String] = []
        for (index, object) in directory.children.filter({ $0.tag == 0x61 }).enumerated() {
            guard let aid = object.child(0x4F)?.value, (5...16).contains(aid.count) else {
                skipped.append("entry \(index + 1): no ADF Name (4F) of 5 to 16 bytes")
                continue
            }
            let priority = object.child(0x87)?.value.first.map { Int($0 & 0x0F) }
            entries.append(
                Entry(
                    applicationIdentifier: aid,
                    label: object.child(0x50).map { Self.printable($0.value) } ?? "",
                    priority: priority == 0 ? nil : priority,
                    kernelIdentifier: object.child(0x9F2A)?.value,
                    order: index
                )
            )
        }
        self.entries = entries
        self.skipped = skipped
    }

    /// Printable ASCII of an `ans` value; anything else is dropped.
    package static func printable(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.filter { (0x20..<0x7F).contains($0) }, as: UTF8.self)
    }

    /// What kernel a directory entry asks for.
    package enum KernelRequest: Hashable {
        /// The entry must be skipped: an extended Kernel Identifier shorter than 3 bytes.
        case skip
        /// Any kernel the terminal runs for the AID: a requested kernel of `00`, or no `9F2A` and an AID whose
        /// RID has no default kernel.
        case any
        case kernel(EMVKernel)
    }

    /// The kernel the entry asks for (EMV Book B §3.3.2.5 C): from `9F2A` byte 1 when its bits 8–7 are `00` or
    /// `01`; bytes 1–3 when they are `10`/`11` and the short kernel ID is not zero; the whole value otherwise.
    /// Without `9F2A`, the default kernel of the AID's RID.
    package static func requestedKernel(for entry: Entry) -> KernelRequest {
        guard let identifier = entry.kernelIdentifier, let first = identifier.first else {
            let registered = PaymentBrand.registry.first { entry.applicationIdentifier.starts(with: $0.rid) }
            return registered?.kernel.map { .kernel($0) } ?? .any
        }
        switch first & 0xC0 {
        case 0x00, 0x40: return first == 0 ? .any : .kernel(EMVKernel(identifier: [first]))
        default:
            guard identifier.count >= 3 else { return .skip }
            if first & 0x3F != 0 { return .kernel(EMVKernel(identifier: Array(identifier.prefix(3)))) }
            return .kernel(EMVKernel(identifier: identifier))
        }
    }

}
