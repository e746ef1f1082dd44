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
    fuzzCertificateRecovery(bytes)

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

/// The ODA parsers of outside bytes: certificate and signature recovery, with a public exponent of 1 so that the
/// fuzzer's bytes are the "recovered" data itself (every check after the RSA step sees them), and the CA key file.
func fuzzCertificateRecovery(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let size = 64 + Int(first) % 185
    guard let identity = try? RSA.PublicKey(modulus: [UInt8](repeating: 0xFF, count: size), exponent: [0x01]) else {
        fatalError("identity key refused")
    }
    let certificate = Array(bytes.dropFirst().prefix(size))
    let rest = Array(bytes.dropFirst(1 + size))
    let authority = CertificationAuthorityKey(
        rid: [0xA0, 0x00, 0x00, 0x00, 0x03],
        index: 0xE1,
        key: identity,
        expiry: CivilTime(year: 2035, month: 12, day: 31)
    )
    let today = CivilTime(year: 2026, month: 3, day: 14)
    let pan: [UInt8] = [0x47, 0x61, 0x73, 0x90, 0x01, 0x01, 0x01, 0x19]
    _ = try? PublicKeyCertificate.issuerKey(
        certificate: certificate,
        remainder: Array(rest.prefix(40)),
        exponent: [0x03],
        authority: authority,
        pan: pan,
        today: today
    )
    _ = try? PublicKeyCertificate.iccKey(
        certificate: certificate,
        remainder: Array(rest.prefix(40)),
        exponent: [0x03],
        issuerKey: identity,
        staticData: rest,
        pan: pan,
        today: today
    )
    if let recovered = try? SignedDynamicData.verify(certificate, iccKey: identity, terminalDynamicData: rest) {
        _ = recovered.combinedFields
    }
    if let json = try? JSONValue.parse(bytes) { _ = try? CertificationAuthorityKeys(json: json) }
}
