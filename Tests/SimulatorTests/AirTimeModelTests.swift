import SimulatorTransport
import Testing

@Suite struct AirTimeModelTests {
    let fdt: Int64 = 1172

    /// 5-byte command, 2-byte response at 106 kbit/s: (8·9 + 2) + (5·9 + 2) = 121 bits of 128/fc, plus two frame
    /// delay times: 121 · 128 + 2 · 1172 = 17,832 cycles = 1,315,044,248 ps (rounded).
    @Test func shortExchangeAt106() {
        let model = AirTimeModel(bitRateKbps: 106, cardProcessing: .zero)
        #expect(model.airCycles(commandBytes: 5, responseBytes: 2).count == 17_832)
        #expect(
            model.exchangeTime(commandBytes: 5, responseBytes: 2)
                == Duration(secondsComponent: 0, attosecondsComponent: 1_315_044_248 * 1_000_000)
        )
    }

    /// A 300-byte response needs two I-blocks (253 + 47 INF bytes) and one R(ACK) from the reader:
    /// command 74 bits; response 9 · (300 + 2 · 3) + 2 · 2 = 2,758 bits; R(ACK) 3 · 9 + 2 = 29 bits;
    /// 4 frames → 2,861 · 128 + 4 · 1172 = 370,896 cycles.
    @Test func chainedResponseAt106() {
        let model = AirTimeModel(bitRateKbps: 106, cardProcessing: .zero)
        #expect(model.airCycles(commandBytes: 5, responseBytes: 300).count == 370_896)
    }

    /// A 261-byte command is chained too (253 + 8), acknowledged by the card.
    @Test func chainedCommandAt106() {
        let model = AirTimeModel(bitRateKbps: 106, cardProcessing: .zero)
        let bits: Int64 = (9 * (261 + 6) + 4) + (9 * 5 + 2) + 29
        #expect(model.airCycles(commandBytes: 261, responseBytes: 2).count == bits * 128 + 4 * fdt)
    }

    @Test func chainingStartsAfter253Bytes() {
        let model = AirTimeModel(bitRateKbps: 106, cardProcessing: .zero)
        let single = model.airCycles(commandBytes: 5, responseBytes: 253).count
        let chained = model.airCycles(commandBytes: 5, responseBytes: 254).count
        // One more byte, one more block header + CRC (3 bytes), SOF/EOF, one R(ACK) and two more frame delays.
        #expect(chained - single == (9 + 27 + 2 + 29) * 128 + 2 * fdt)
    }

    @Test(arguments: [(212, 2), (424, 4), (848, 8)])
    func higherBitRatesDivideTheBitTime(rate: Int, factor: Int64) {
        let base = AirTimeModel(bitRateKbps: 106, cardProcessing: .zero)
        let fast = AirTimeModel(bitRateKbps: rate, cardProcessing: .zero)
        for (command, response) in [(5, 2), (20, 300), (1000, 4000)] {
            // The frame delay time stays 1172/fc; only the bits get shorter.
            let delays = delayCycles(command, response)
            let slowBits = base.airCycles(commandBytes: command, responseBytes: response).count - delays
            let fastBits = fast.airCycles(commandBytes: command, responseBytes: response).count - delays
            #expect(slowBits == factor * fastBits)
        }
        #expect(fast.airCycles(commandBytes: 5, responseBytes: 2).count == 121 * (128 / factor) + 2 * fdt)
    }

    /// Frame delay cycles of an exchange: one per frame, 2c + 2r − 2 frames.
    func delayCycles(_ command: Int, _ response: Int) -> Int64 {
        let c = Int64(max(1, (command + 252) / 253))
        let r = Int64(max(1, (response + 252) / 253))
        return (2 * c + 2 * r - 2) * fdt
    }

    @Test func cardProcessingIsAddedOnce() {
        let model = AirTimeModel(bitRateKbps: 106, cardProcessing: .milliseconds(1))
        let air = AirTimeModel(bitRateKbps: 106, cardProcessing: .zero).exchangeTime(commandBytes: 5, responseBytes: 2)
        #expect(model.exchangeTime(commandBytes: 5, responseBytes: 2) == air + .milliseconds(1))
    }

    @Test func oneSecondOfCyclesIsOneSecond() {
        #expect(AirTimeModel.Cycles(count: 13_560_000).duration == .seconds(1))
        #expect(AirTimeModel.Cycles(count: 13_560_000 * 3 + 1356).duration == .seconds(3) + .microseconds(100))
    }

    @Test func unknownBitRateFallsBackTo106() {
        #expect(AirTimeModel(bitRateKbps: 300).bitRateKbps == 106)
    }
}
