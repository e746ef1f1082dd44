import EMVCommon
import FuzzSupport
import PaymentCapability
import ProximaCore

/// libFuzzer entry: the EMV parsers and a whole payment read against a card that answers with fuzzer bytes.
/// Any input must end in an outcome or a `PaymentError` / `ProximaError`, never a trap or a hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = try? PaymentDirectory(fci: bytes)
    _ = try? ApplicationFileLocator(bytes: bytes)
    _ = try? ProcessingOptions(responseData: bytes)
    _ = try? GenerateACResponse(responseData: bytes)
    _ = try? CVMList(bytes: bytes, step: "fuzz")

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
