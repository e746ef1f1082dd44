import EMVCommon
import FuzzSupport
import PaymentCapability
import ProximaCore
import ProximaCrypto

/// A fixed processor key and reader key for the envelope opener (any valid keys do: inputs are not sealed to them,
/// the opener's checks before and after HPKE are what is fuzzed).
let processorKey = try? P256.PrivateKey(rawRepresentation: Array(repeating: 0x11, count: 32))
let readerKey = try? P256.PrivateKey(rawRepresentation: Array(repeating: 0x22, count: 32))

/// libFuzzer entry: the EMV parsers, the card data envelope opener (versions 1 and 2), the amount parser, and a
/// whole payment read against a card that answers with fuzzer bytes. Any input must end in an outcome or a
/// `PaymentError` / `ProximaError` / `CardDataEnvelopeError` / `PaymentServiceError`, never a trap or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = try? PaymentDirectory(fci: bytes)
    _ = try? ApplicationFileLocator(bytes: bytes)
    _ = try? ProcessingOptions(responseData: bytes)
    _ = try? GenerateACResponse(responseData: bytes)
    _ = try? CVMList(bytes: bytes, step: "fuzz")
    if let processorKey, let readerKey {
        _ = try? CardDataEnvelope.open(bytes, privateKey: processorKey, readerKeys: [readerKey.publicKey])
    }
    for code in ["USD", "JPY", "KWD"] {
        _ = try? ISO4217Currency(alphabeticCode: code)?.minorUnits(parsing: String(decoding: bytes, as: UTF8.self))
    }

    let channel = FuzzedChannel(answers: bytes)
    runToCompletion {
        let capability = EMVPaymentCapability(unpredictableNumbers: UnpredictableNumberSource { 0x1234_5678 })
        let transaction = EMVTransaction(
            amountAuthorised: 2999,
            currencyCode: 840,
            date: TransactionDate(year: 2026, month: 11, day: 30)
        )
        do {
            _ = try await capability.run(
                transaction,
                on: channel,
                context: TapContext(lane: "fuzz", reader: "fuzz", tapID: 1)
            )
        } catch is PaymentError {
        } catch let error as ProximaError {
            let expected: Set<ProximaError.Code> = [.cardRemoved, .malformedData, .unsupported, .invalidArgument]
            guard expected.contains(error.code) else { fatalError("unexpected error \(error)") }
        } catch {
            fatalError("unexpected error type \(error)")
        }
        // Bounded work: the capability caps records and candidates, so the APDU count is bounded too.
        guard channel.sent.count <= 200 else { fatalError("sent \(channel.sent.count) APDUs") }
    }
    return 0
}
