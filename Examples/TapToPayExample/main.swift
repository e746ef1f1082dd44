// Tap to Pay against the simulator: the usage sketch of Apple's ProximityReader with `import Proxima` as its only
// change, then the sketch's error handling.
//
// Run it from the package root:
//
//     swift run TapToPayExample
//
// `PaymentCardReader()` uses the manifest `PROXIMA_CONFIG` names (else Config/proxima.json: simulated readers with
// the TEST payment cards) and its first lane (or `PROXIMA_LANE`). The processor token is `PSP_TOKEN`; without it
// the example issues a sandbox token itself, signed with the TEST processor key next to the manifest
// (keys/psp-test-private.pem, or the file `PSP_PRIVATE_KEY` names), through `PaymentProcessorSandbox`, as
// `proxima psp token` does. The sandbox is the processor's side, its own product: an app never links it.
import Proxima
import ProximaProcessorSandbox

do {
    let environmentToken = ProcessInfo.processInfo.environment["PSP_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    let pspProvidedJWT =
        try environmentToken
        ?? PaymentProcessorSandbox.forDefaultConfiguration().issueToken(merchantID: "sandbox-merchant-001").rawValue

    // The usage sketch, as written for iOS.
    let reader = PaymentCardReader()
    let token = PaymentCardReader.Token(rawValue: pspProvidedJWT)
    if try await !reader.isAccountLinked(using: token) {
        try await reader.linkAccount(using: token)
    }
    let session = try await PaymentCardReaderSession(reader: reader, token: token)
    try await session.prepare()
    let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)
    let result: PaymentCardReadResult = try await session.readPaymentCard(request)
    // Send result.paymentCardData to your PSP for processing

    print("read: \(result)")
    print("paymentCardData for the processor (\(result.paymentCardData?.utf8.count ?? 0) base64 characters)")

    // The sketch's error handling. Swift wants a statement in every case, so each prints what the sketch's comment
    // says; everything else is as written.
    do {
        try await session.readPaymentCard(request)
        print("second read: done")
    } catch let error as PaymentCardReaderError {
        switch error {
        case .notAllowed:
            print("Missing entitlement or not authorized: \(error)")
        case .unsupported:
            print("Device doesn't support Tap to Pay: \(error)")
        case .networkError:
            print("Connectivity issue: \(error)")
        case .invalidReaderToken:
            print("Token from PSP is invalid or expired: \(error)")
        case .readerBusy:
            print("Another read session is active: \(error)")
        case .backgrounded:
            print("App moved to background during read — must call prepare() again: \(error)")
        default:
            break
        }
    } catch let error as PaymentCardReaderSession.ReadError {
        switch error {
        case .cancelled:
            print("Customer cancelled the tap: \(error)")
        case .invalidAmount:
            print("Amount was negative or zero: \(error)")
        case .notReady:
            print("prepare() was not called: \(error)")
        default:
            print("second read: \(error)")
        }
    }
} catch {
    // Anything the sketch does not handle ends the example with its reason, which names what failed and where.
    print("TapToPayExample: \(error)")
    exit(1)
}
