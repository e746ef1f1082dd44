/// How long one APDU exchange occupies the RF field of an ISO/IEC 14443 Type A reader.
///
/// The model (ISO/IEC 14443-2 §8 bit rates, -3 §6 framing and frame delay time, -4 §7 block format and
/// chaining; figures as collected in `notes/emv-and-retail.md` §3):
///
/// - Carrier fc = 13.56 MHz. One bit lasts 128/fc at 106 kbit/s (≈ 9.44 µs), 64/fc at 212, 32/fc at 424 and
///   16/fc at 848 kbit/s.
/// - A frame carries 9 bits per byte (8 data bits + odd parity) plus 2 bits for start and end of frame.
/// - An I-block is PCB (1 byte) + INF + CRC_A (2 bytes). With FSC = FSD = 256 a block holds at most
///   ``maximumINFBytes`` = 253 INF bytes, so a longer command or response goes in ⌈n / 253⌉ chained I-blocks;
///   every block but the last is acknowledged by an R(ACK) from the other side (PCB + CRC_A = 3 bytes).
/// - Every frame, in either direction, is followed by a frame delay time of 1172/fc (≈ 86.4 µs), the minimum
///   FDT of ISO/IEC 14443-3 at 106 kbit/s, kept for all bit rates.
/// - The card then computes for ``cardProcessing`` once per exchange.
///
/// So for a command of C bytes in c = max(1, ⌈C/253⌉) blocks and a response of R bytes in r = max(1, ⌈R/253⌉):
///
///     bits   = 9·(C + 3c) + 2c  +  9·(R + 3r) + 2r  +  29·((c − 1) + (r − 1))
///     frames = 2c + 2r − 2
///     time   = (bits · cyclesPerBit + frames · 1172) / fc + cardProcessing
///
/// Example: a 5-byte command and a 2-byte response at 106 kbit/s: 74 + 47 = 121 bits · 128 + 2 · 1172 =
/// 17,832 cycles ≈ 1.315 ms, plus card processing. Not modelled: S(WTX) extensions, CID/NAD bytes, anti-collision
/// and activation (they happen before `connect` returns), retransmissions.
public struct AirTimeModel: Hashable, Sendable {
    /// The carrier frequency in Hz.
    public static let carrierHz: Int64 = 13_560_000
    /// Frame delay time in carrier cycles (1172/fc).
    public static let frameDelayCycles: Int64 = 1172
    /// INF bytes in one I-block when FSC = FSD = 256 (256 − PCB − 2 CRC bytes).
    public static let maximumINFBytes = 253
    /// The bit rates ISO/IEC 14443 defines, in kbit/s.
    public static let bitRates = [106, 212, 424, 848]

    /// 106, 212, 424 or 848.
    public let bitRateKbps: Int
    /// The card's compute time per APDU.
    public let cardProcessing: Duration
    private let cyclesPerBit: Int64

    /// - Parameters:
    ///   - bitRateKbps: one of ``bitRates``; any other value is treated as 106.
    ///   - cardProcessing: added once per exchange (negative values count as zero).
    public init(bitRateKbps: Int = 106, cardProcessing: Duration = .milliseconds(1)) {
        let rate = Self.bitRates.contains(bitRateKbps) ? bitRateKbps : 106
        self.bitRateKbps = rate
        self.cardProcessing = max(cardProcessing, .zero)
        cyclesPerBit = Int64(128 / (rate / 106))
    }

    /// The field time of one exchange: both directions' frames, chaining acknowledgements, frame delay times
    /// and the card's processing time.
    /// - Parameters:
    ///   - commandBytes: the command APDU's length (negative counts as 0).
    ///   - responseBytes: the response APDU's length, status word included (negative counts as 0).
    public func exchangeTime(commandBytes: Int, responseBytes: Int) -> Duration {
        airCycles(commandBytes: commandBytes, responseBytes: responseBytes).duration + cardProcessing
    }

    /// Carrier cycles on air for one exchange, without card processing.
    public func airCycles(commandBytes: Int, responseBytes: Int) -> Cycles {
        let command = Int64(max(commandBytes, 0))
        let response = Int64(max(responseBytes, 0))
        let inf = Int64(Self.maximumINFBytes)
        let commandBlocks = max(1, (command + inf - 1) / inf)
        let responseBlocks = max(1, (response + inf - 1) / inf)
        let acknowledgements = (commandBlocks - 1) + (responseBlocks - 1)
        let bits =
            9 * (command + 3 * commandBlocks) + 2 * commandBlocks
            + 9 * (response + 3 * responseBlocks) + 2 * responseBlocks
            + (9 * 3 + 2) * acknowledgements
        let frames = 2 * commandBlocks + 2 * responseBlocks - 2
        return Cycles(count: bits * cyclesPerBit + frames * Self.frameDelayCycles)
    }

    /// A number of 13.56 MHz carrier cycles.
    public struct Cycles: Hashable, Sendable {
        public var count: Int64
        public init(count: Int64) { self.count = count }

        /// The cycles as time, rounded to the nearest picosecond.
        public var duration: Duration {
            // ps = cycles · 10^12 / 13,560,000 = cycles · 10^8 / 1356; whole seconds first so nothing overflows.
            let hz = AirTimeModel.carrierHz
            let seconds = count / hz
            let rest = count % hz
            let picoseconds = (rest * 100_000_000 + 678) / 1356
            return .seconds(seconds) + Duration(secondsComponent: 0, attosecondsComponent: picoseconds * 1_000_000)
        }
    }
}
