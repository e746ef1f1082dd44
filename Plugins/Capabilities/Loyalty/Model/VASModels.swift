package import Foundation
package import ProximaCore

/// The VAS mode a terminal announces in `9F26` byte 4 bits 1–0 (kormax/apple-vas README; proxmark3 `cmdhfvas.c`).
package enum VASMode: UInt8, Hashable, Sendable, CaseIterable {
    /// The phone offers a pass or a payment card, whichever the customer picks (`00`).
    case vasOrPayment = 0
    /// The pass, then a payment card in the same tap (`01`).
    case vasAndPayment = 1
    /// Only passes; the phone shows the pass read (`10`).
    case vasOnly = 2
    /// No pass: the terminal sends no GET VAS DATA at all (`11`).
    case paymentOnly = 3
}

/// How a merchant's pass read ended: the status word of its GET VAS DATA, by the names of Apple's
/// `VASReadResult.ReadEntry.Status` (wire values from CoreNFC's `NFCVASResponse.ErrorCode`).
package enum VASEntryStatus: String, Hashable, Sendable, CaseIterable {
    /// `9000`: the pass answered with its cryptogram, which decrypted and is fresh.
    case success
    /// `6A83`: no pass of this pass type on the phone (also every merchant when the phone has no VAS at all).
    case vasDataNotFound
    /// `6287`: the pass exists but the phone is locked or wants user authentication.
    case vasDataNotActivated
    /// `6984`: the customer must pick or confirm the pass on the phone.
    case userInterventionRequired
    /// `6A80`: the phone found the request's data incorrect.
    case incorrectData
    /// `6700`: the phone refused the command's length.
    case wrongCommandLength
    /// `6B00`: the phone refused P1/P2.
    case wrongP1P2
    /// `6340`, or an FCI whose VAS version (`9F21`) is not 1.0: the phone's VAS version is not supported.
    case unsupportedApplicationVersion

    /// The status a GET VAS DATA status word stands for, or `nil` for one VAS does not define.
    package init?(statusWord: StatusWord) {
        switch statusWord.rawValue {
        case 0x9000: self = .success
        case 0x6A83: self = .vasDataNotFound
        case 0x6287: self = .vasDataNotActivated
        case 0x6984: self = .userInterventionRequired
        case 0x6A80: self = .incorrectData
        case 0x6700: self = .wrongCommandLength
        case 0x6B00: self = .wrongP1P2
        case 0x6340: self = .unsupportedApplicationVersion
        default: return nil
        }
    }

    /// The status word a phone answers for this status (the virtual phone's side).
    package var statusWord: StatusWord {
        switch self {
        case .success: StatusWord(rawValue: 0x9000)
        case .vasDataNotFound: StatusWord(rawValue: 0x6A83)
        case .vasDataNotActivated: StatusWord(rawValue: 0x6287)
        case .userInterventionRequired: StatusWord(rawValue: 0x6984)
        case .incorrectData: StatusWord(rawValue: 0x6A80)
        case .wrongCommandLength: StatusWord(rawValue: 0x6700)
        case .wrongP1P2: StatusWord(rawValue: 0x6B00)
        case .unsupportedApplicationVersion: StatusWord(rawValue: 0x6340)
        }
    }
}

/// One merchant the terminal asks for.
package struct VASMerchantRequest: Hashable, Sendable {
    /// The pass type identifier (`pass.com.example.loyalty`); its SHA-256 goes out as `9F25`.
    package var passTypeIdentifier: String
    /// The signup URL sent as `9F29` (https, ASCII, at most 64 characters as CoreNFC allows).
    package var signupURL: String?

    package init(passTypeIdentifier: String, signupURL: String? = nil) {
        self.passTypeIdentifier = passTypeIdentifier
        self.signupURL = signupURL
    }
}

/// One tap's VAS request: the merchants in order and the mode.
package struct VASReadRequest: Hashable, Sendable {
    package var merchants: [VASMerchantRequest]
    package var mode: VASMode

    package init(merchants: [VASMerchantRequest], mode: VASMode) {
        self.merchants = merchants
        self.mode = mode
    }
}

/// What the phone's SELECT OSE.VAS.01 answer says (FCI `6F`).
package struct VASApplicationInfo: Hashable, Sendable {
    /// `50`: `ApplePay` on an iPhone, `AndroidPay` on an Android phone.
    package var walletLabel: String?
    /// `9F21`: the VAS version, `0100` for 1.0.
    package var version: [UInt8]
    /// `9F24`: the device nonce, when present (fresh each tap; it does not enter the cryptogram).
    package var deviceNonce: [UInt8]?
    /// `9F23`: the mobile capabilities, four bytes.
    package var capabilities: [UInt8]
    /// The Smart Tap part of an Android phone's answer (`C0`–`C3`, the Smart Tap 2 directory entry); `nil` when the
    /// answer has none of it.
    package var smartTap: SmartTapDirectory? = nil

    /// The one version this terminal speaks.
    package static let supportedVersion: [UInt8] = [0x01, 0x00]

    package var isSupportedVersion: Bool { version == Self.supportedVersion }
    /// `9F23` byte 4 bit 3: VAS may be performed.
    package var mayPerformVAS: Bool { capabilities.count == 4 && capabilities[3] & 0x08 != 0 }
    /// `9F23` byte 4 bit 5: a payment may follow in this tap.
    package var mayPerformPayment: Bool { capabilities.count == 4 && capabilities[3] & 0x20 != 0 }
}

/// One merchant's entry of a VAS read. ``message`` is the customer's pass data in clear: `package`, handed to an
/// app only through the API's `customerVASData`, never logged.
package struct VASEntry: Hashable, Sendable {
    package var passTypeIdentifier: String
    package var status: VASEntryStatus
    /// The decrypted pass message (UTF-8 as phones send it), only for ``VASEntryStatus/success``.
    package var message: [UInt8]?
    /// When the phone made the cryptogram, only for ``VASEntryStatus/success``.
    package var cryptogramTime: Date?
    /// `9F2A`, the mobile token, when the phone sent a non-empty one.
    package var mobileToken: [UInt8]?
}

/// What a VAS tap read: the phone's FCI (`nil` when it has no VAS application) and one entry per merchant asked,
/// in request order; a Google Smart Tap pass is one more entry whose ``VASEntry/passTypeIdentifier`` is the
/// collector ID in decimal (where the request named it, else last).
package struct VASOutcome: Hashable, Sendable {
    package var application: VASApplicationInfo?
    package var entries: [VASEntry]
    package var reader: ReaderID

    /// Whether any entry succeeded (what `stopOnVASResult` stops on).
    package var hasSuccess: Bool { entries.contains { $0.status == .success } }
}
