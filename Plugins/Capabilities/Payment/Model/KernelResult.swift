internal import EMVCommon
internal import ProximaCore

extension PaymentSession {
    struct KernelResult {
        var type: CryptogramType
        var cvm: CardholderVerification
    }

    enum GenerateACResult {
        case completed(KernelResult)
        /// GENERATE AC was answered with this status, not `9000`.
        case ended(StatusWord)
    }
}
