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

/// How a Smart Tap status word is read. SW1 names the family and tells the terminal what to do; SW2 is detail the
/// terminal need not interpret, and a phone may send values of it listed nowhere (Google's "Status words" page of the
/// Smart Tap APDU reference, developers.google.com/wallet/smart-tap/terminal/reference/apdu-commands/status-words).
/// The names of the SW2 values are those of proxmark3's `client/src/cmdhfgst.c` (`gst_status_name`), which follow
/// that page; kormax/google-smart-tap lists `9302` and `9406` the same way.
///
/// - `90xx` done: `9000` OK, `9001` no pass, `9002` OK with pre-signed authentication.
/// - `91xx` done, no payment in this tap: `9100` more data (GET MORE DATA), `9101` pass OK, `9102` no pass.
/// - `92xx` transient, retry a few times then stop Smart Tap: `9200` unknown, `9201` crypto failure, `9203`
///   execution failure.
/// - `93xx` the customer must act on the phone: `9300` device locked, `9302` a choice of passes is shown.
/// - `94xx` the terminal's command is wrong: `9400` unknown command, `9402` parsing failure, `9403` invalid crypto
///   input, `9404` request-more not applicable, `9405` no more data, `9406` too many requests, `9407` no merchant
///   set, `9408` invalid pushback URI.
/// - `95xx` permanent, stop Smart Tap: `9500` authentication failed (collector, key version or signature not
///   accepted), `9502` version not supported.
package enum SmartTapStatus: Hashable, Sendable {
    /// `9000`, `9002`, `9101`: done; `91xx` says the phone will not pay in this tap.
    case success
    /// `9100`: more data, read it with GET MORE DATA.
    case moreData
    /// `9001`, `9102`: no pass for this collector.
    case noPass
    /// `92xx`: a transient failure.
    case transient
    /// `93xx`: the customer must act on the phone (unlock it, choose a pass).
    case userAction
    /// `94xx`: the phone rejects the terminal's command (malformed, out of order, too many).
    case commandRejected
    /// `95xx`: a permanent refusal (`9500`: the phone could not authenticate the terminal).
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
        case (0x94, _): self = .commandRejected
        case (0x95, _): self = .refused
        default: self = .undefined
        }
    }

    /// What a status word that is not a success means, for an error's reason.
    package static func meaning(_ status: StatusWord) -> String {
        switch (status.sw1, status.sw2) {
        case (0x92, 0x01): "a transient crypto failure on the phone: tap again"
        case (0x92, 0x03): "a transient execution failure on the phone: tap again"
        case (0x92, _): "a transient failure on the phone: tap again"
        case (0x93, 0x00): "the phone is locked: the customer must unlock it"
        case (0x93, 0x02): "the customer must choose a pass on the phone"
        case (0x93, _): "the customer must act on the phone (unlock it or choose a pass)"
        case (0x94, 0x00): "the phone does not know this terminal command"
        case (0x94, 0x02): "the phone could not parse the terminal's command"
        case (0x94, 0x03): "the phone refuses the terminal's crypto input (nonce, ephemeral key or session)"
        case (0x94, 0x04): "the phone says GET MORE DATA does not apply here"
        case (0x94, 0x05): "the phone has no more data"
        case (0x94, 0x06): "the phone refuses: too many requests in this tap"
        case (0x94, 0x07): "the phone has no merchant set: the collector of GET DATA is not the negotiated one"
        case (0x94, 0x08): "the phone refuses the terminal's pushback URI"
        case (0x94, _): "the phone rejects the terminal's command"
        case (0x95, 0x00):
            "the phone could not authenticate the terminal: collector ID, key version or collector signature not "
                + "accepted"
        case (0x95, 0x02): "the phone does not support this Smart Tap version"
        case (0x95, _): "the phone refuses permanently"
        default: "not a Smart Tap status word (90xx, 91xx, 92xx, 93xx, 94xx, 95xx)"
        }
    }
}
