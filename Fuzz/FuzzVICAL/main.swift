import MobileDocumentCapability
import ProximaCore
import ProximaCrypto

/// A P-256 TEST certificate (the Annex D IACA, public ISO/IEC 18013-5 test data) standing in as the VICAL signer
/// anchor and as the signer of payloads parsed directly.
private let anchor = try! X509Certificate(
    derRepresentation: [UInt8](
        hex: "308201ce30820173a00302010202142ab4edd052b2582f4c6ad96186de70f4de5a3994300a06082a8648ce3d04030230"
            + "233114301206035504030c0b75746f7069612069616361310b3009060355040613025553301e170d3230313030313030"
            + "303030305a170d3239303932393030303030305a30233114301206035504030c0b75746f7069612069616361310b3009"
            + "0603550406130255533059301306072a8648ce3d020106082a8648ce3d030107034200042c3e103dbc07b25c5a770aee"
            + "dfa5d8bd15417e3e676142461a7875e3b4188a2221e6423599d1db19aaef66f923d394b61709549bcec2ea6ff60ec752"
            + "68f2e094a38184308181301e0603551d120417301581136578616d706c65406578616d706c652e636f6d301c0603551d"
            + "1f041530133011a00fa00d820b6578616d706c652e636f6d301d0603551d0e0416041454fa2383a04c28e0d930792261"
            + "c80c4881d2c00b300e0603551d0f0101ff04040302010630120603551d130101ff040830060101ff020100300a06082a"
            + "8648ce3d0403020349003046022100ec897f0b8ae51028288955031f860069659b75989af7129fa609c24299a5c78702"
            + "2100d088d8741f5d05b360ef6e85023e90df1d31dd1e6701a88efe9a7103021f986c"
    )!
)
private let store = try! X509TrustStore(anchors: [anchor])

/// libFuzzer entry: a signed VICAL (COSE_Sign1, x5chain, signer chain) and, past the signature gate, the VICAL
/// payload and its entries must never trap on any bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = try? VICAL.verify(bytes, signerAnchors: store, now: 1_700_000_000)
    _ = try? VICAL.contents(ofPayload: bytes, signer: anchor, now: 1_700_000_000)
    // A signed VICAL's own payload, so seeds of whole files also exercise the entry checks.
    if let message = try? COSESign1(encoded: bytes), let payload = message.payload {
        _ = try? VICAL.contents(ofPayload: payload, signer: anchor, now: 1_700_000_000)
    }
    return 0
}
