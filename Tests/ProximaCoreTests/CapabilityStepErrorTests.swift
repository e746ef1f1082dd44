import ProximaCore
import Testing

/// The behaviour `CapabilityStepError` gives `PaymentError` and `LoyaltyError`, on a step error of the test's own.
@Suite struct CapabilityStepErrorTests {
    struct StepError: CapabilityStepError {
        enum Code: String, Hashable, Sendable, CustomStringConvertible {
            case refused, malformed
            var description: String { rawValue }
        }
        let code: Code
        let step: String
        let reason: String
        let reader: ReaderID?
        init(_ code: Code, step: String, _ reason: String, reader: ReaderID? = nil) {
            self.code = code
            self.step = step
            self.reason = reason
            self.reader = reader
        }
    }

    @Test func equalityAndHashingGoByCodeOnly() {
        let one = StepError(.refused, step: "SELECT PPSE", "status 6A82")
        let other = StepError(.refused, step: "GENERATE AC", "another reason", reader: "r1")
        #expect(one == other)
        #expect(Set([one, other]).count == 1)
        #expect(one != StepError(.malformed, step: "SELECT PPSE", "status 6A82"))
    }

    @Test func describesCodeReaderStepAndReason() {
        let error = StepError(.malformed, step: "READ RECORD SFI 1 record 2", "TLV length at offset 3 exceeds data")
        #expect(error.description == "malformed: READ RECORD SFI 1 record 2: TLV length at offset 3 exceeds data")
        let located = error.at(reader: "sim-1")
        #expect(
            located.description
                == "malformed [reader sim-1]: READ RECORD SFI 1 record 2: TLV length at offset 3 exceeds data"
        )
        #expect(located.at(reader: "sim-2").reader == "sim-1", "a reader already named is kept")
        #expect(located.step == error.step && located.reason == error.reason)
    }
}
