package import ProximaCore

/// What an Android phone's answer to SELECT OSE.VAS.01 says about Google Smart Tap (kormax/google-smart-tap
/// README, "SELECT VAS APPLET"): `6F { 50 "AndroidPay", C0 version, C1 flags, C2 device nonce (32), C3 device
/// ephemeral key (33, compressed), A5 { BF0C { 61 { 4F AID, 87 priority, 73 { DF6D min, DF4D max } } } } }`.
/// `C1`–`C3`, `A5` and `73` may be missing on older phones.
package struct SmartTapDirectory: Hashable, Sendable {
    /// `C0`, the phone's Smart Tap version.
    package var version: [UInt8]?
    /// `C2`, the device nonce (Smart Tap 2.1 phones send it here; SELECT Smart Tap 2 repeats it in `mdn`).
    package var deviceNonce: [UInt8]?
    /// `C3`, the device's ephemeral key for this tap.
    package var deviceEphemeral: [UInt8]?
    /// The directory entries (`61`) whose AID (`4F`) is Smart Tap 2's.
    package var offersSmartTap2: Bool
}

/// How a Smart Tap status word is read (Google's "Status words" page of the Smart Tap APDU reference; kormax
/// google-smart-tap README): SW1 names the family, SW2 is detail the terminal need not interpret.
package enum SmartTapStatus: Hashable, Sendable {
    /// `9000`, `9002`, `9101`: done; `91xx` says the phone will not pay in this tap.
    case success
    /// `9100`: more data, read it with GET MORE DATA.
    case moreData
    /// `9001`, `9102`: no pass for this collector.
    case noPass
    /// `93xx`: the customer must act on the phone (`9302`: choose a pass; unlock).
    case userAction
    /// `92xx`: a transient failure, tap again.
    case transient
    /// `94xx`: a permanent refusal (`9406`: too many requests; the virtual phone answers `9401` for a collector or
    /// key version it does not know and `9402` for a signature that does not verify).
    case refused
    /// Anything else: not a Smart Tap status.
    case undefined

    package init(_ status: StatusWord) {
        switch (status.sw1, status.sw2) {
        case (0x90, 0x01): self = .noPass
        case (0x90, _): self = .success
        case (0x91, 0x00): self = .moreData
        case (0x91, 0x02): self = .noPass
        case (0x91, _): self = .success
        case (0x92, _): self = .transient
        case (0x93, _): self = .userAction
        case (0x94, _): self = .refused
        default: self = .undefined
        }
    }

    /// What a status word that is not a success means, for an error's reason.
    package static func meaning(_ status: StatusWord) -> String {
        switch (status.sw1, status.sw2) {
        case (0x93, 0x02): "the customer must choose a pass on the phone"
        case (0x93, _): "the customer must act on the phone (unlock it or choose a pass)"
        case (0x94, 0x06): "the phone refuses: too many requests in this tap"
        case (0x94, 0x01): "the phone does not accept this collector ID or key version"
        case (0x94, 0x02): "the phone did not verify the collector's signature"
        case (0x94, _): "the phone refuses permanently (collector, key version or signature not accepted)"
        case (0x92, _): "a transient failure on the phone: tap again"
        default: "not a Smart Tap status word (9000, 9001, 9100, 91xx, 92xx, 93xx, 94xx)"
        }
    }
}
