internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    struct KernelResult {
        var type: CryptogramType
        var cvm: CardholderVerification
    }
}
