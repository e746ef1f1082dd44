internal import ProximaCore

/// A card scheme, known from the registered application provider identifier (RID, the first five AID bytes,
/// ISO/IEC 7816-5) and, for Maestro, the full AID.
public struct PaymentBrand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let visa = PaymentBrand(rawValue: "visa")
    public static let mastercard = PaymentBrand(rawValue: "mastercard")
    public static let maestro = PaymentBrand(rawValue: "maestro")
    public static let americanExpress = PaymentBrand(rawValue: "amex")
    public static let discover = PaymentBrand(rawValue: "discover")
    public static let jcb = PaymentBrand(rawValue: "jcb")
    public static let unionPay = PaymentBrand(rawValue: "unionpay")
    public static let interac = PaymentBrand(rawValue: "interac")
    /// Cartes Bancaires (France, RID `A000000042`); no EMVCo kernel of its own: terminals run it on Kernel 3 or 2.
    public static let cartesBancaires = PaymentBrand(rawValue: "cb")
    /// girocard (Germany, RID `A000000059`); runs on the kernel the terminal configures for it.
    public static let girocard = PaymentBrand(rawValue: "girocard")
    public static let unknown = PaymentBrand(rawValue: "unknown")

    package static let visaRID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x03]
    package static let mastercardRID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x04]
    package static let maestroAID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x04, 0x30, 0x60]

    /// The registered RIDs this type knows, with the brand and its default kernel (EMV Book B §3.3.2.5 C: the
    /// kernel an AID gets when its directory entry has no Kernel Identifier; Book A Table 5-2 numbers them).
    package static let registry: [(rid: [UInt8], brand: PaymentBrand, kernel: EMVKernel?)] = [
        (visaRID, .visa, .visa),
        (mastercardRID, .mastercard, .mastercard),
        ([0xA0, 0x00, 0x00, 0x00, 0x25], .americanExpress, .americanExpress),
        ([0xA0, 0x00, 0x00, 0x00, 0x65], .jcb, .jcb),
        ([0xA0, 0x00, 0x00, 0x01, 0x52], .discover, .discover),
        ([0xA0, 0x00, 0x00, 0x03, 0x24], .discover, .discover),
        ([0xA0, 0x00, 0x00, 0x03, 0x33], .unionPay, .unionPay),
        ([0xA0, 0x00, 0x00, 0x02, 0x77], .interac, nil),
        ([0xA0, 0x00, 0x00, 0x00, 0x42], .cartesBancaires, nil),
        ([0xA0, 0x00, 0x00, 0x00, 0x59], .girocard, nil),
    ]

    /// The brand of an application identifier; ``unknown`` for an RID not in the registry.
    public init(applicationIdentifier aid: [UInt8]) {
        if aid.starts(with: Self.maestroAID) {
            self = .maestro
            return
        }
        self = Self.registry.first { aid.starts(with: $0.rid) }?.brand ?? .unknown
    }

    public var description: String {
        switch self {
        case .visa: "Visa"
        case .mastercard: "Mastercard"
        case .maestro: "Maestro"
        case .americanExpress: "American Express"
        case .discover: "Discover"
        case .jcb: "JCB"
        case .unionPay: "UnionPay"
        case .interac: "Interac"
        case .cartesBancaires: "CB"
        case .girocard: "girocard"
        default: rawValue
        }
    }
}

/// A contactless kernel, by its Kernel ID (EMV Book B §3.3.2.5 C, Book A Table 5-2): one byte for the EMVCo
/// kernels (`02` Mastercard, `03` Visa, …), three or more bytes for an extended (domestic) kernel.
public struct EMVKernel: Hashable, Sendable, CustomStringConvertible {
    public let identifier: [UInt8]
    public init(identifier: [UInt8]) { self.identifier = identifier }

    /// Kernel 1 (some Visa and JCB cards without TTQ in their PDOL); not implemented.
    public static let kernel1 = EMVKernel(identifier: [0x01])
    /// Kernel 2, Mastercard M/Chip (EMV Book C-2). Implemented.
    public static let mastercard = EMVKernel(identifier: [0x02])
    /// Kernel 3, Visa qVSDC (EMV Book C-3). Implemented.
    public static let visa = EMVKernel(identifier: [0x03])
    /// Kernel 4, American Express (EMV Book C-4). Implemented.
    public static let americanExpress = EMVKernel(identifier: [0x04])
    /// Kernel 5, JCB (EMV Book C-5). Implemented.
    public static let jcb = EMVKernel(identifier: [0x05])
    /// Kernel 6, Discover (EMV Book C-6). Implemented.
    public static let discover = EMVKernel(identifier: [0x06])
    /// Kernel 7, UnionPay (EMV Book C-7). Implemented.
    public static let unionPay = EMVKernel(identifier: [0x07])

    /// The kernels this capability runs.
    public static let implemented: Set<EMVKernel> = [.mastercard, .visa, .americanExpress, .jcb, .discover, .unionPay]

    public var description: String {
        switch self {
        case .kernel1: "Kernel 1"
        case .mastercard: "Kernel 2 (Mastercard M/Chip)"
        case .visa: "Kernel 3 (Visa qVSDC)"
        case .americanExpress: "Kernel 4 (American Express)"
        case .jcb: "Kernel 5 (JCB)"
        case .discover: "Kernel 6 (Discover)"
        case .unionPay: "Kernel 7 (UnionPay)"
        default: "kernel \(identifier.hexString)"
        }
    }
}

/// A payment application a card offers: from its PPSE directory entry (EMV Book B §3.3.2), with the kernel
/// Entry Point chose for it.
public struct EMVApplication: Hashable, Sendable, CustomStringConvertible {
    /// The AID / ADF Name (tag `4F`) selected with SELECT.
    public var identifier: [UInt8]
    /// The Application Label (tag `50`), printable ASCII only; empty when absent.
    public var label: String
    /// The Application Priority Indicator (tag `87`) bits 4–1, 1 being highest; `nil` when absent or 0.
    public var priority: Int?
    /// The kernel: the card's Kernel Identifier (`9F2A`) or the default for the AID.
    public var kernel: EMVKernel
    public var brand: PaymentBrand { PaymentBrand(applicationIdentifier: identifier) }

    public init(identifier: [UInt8], label: String, priority: Int?, kernel: EMVKernel) {
        self.identifier = identifier
        self.label = label
        self.priority = priority
        self.kernel = kernel
    }

    public var description: String {
        let name = label.isEmpty ? "" : " \"\(label)\""
        return "\(identifier.hexString)\(name) (\(brand), \(kernel))"
    }
}
