import Foundation
import ProximaCore
import Testing

@Suite struct CivilTimeTests {
    /// Known answers (Unix time of well-known instants, leap days and century rules included).
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"),
        (Int64(951_782_400), "2000-02-29T00:00:00Z"),
        (Int64(1_709_251_199), "2024-02-29T23:59:59Z"),
        (Int64(4_107_542_400), "2100-03-01T00:00:00Z"),
        (Int64(-1), "1969-12-31T23:59:59Z"),
        (Int64(1_796_020_769), "2026-11-30T06:39:29Z"),
    ])
    func convertsBothWays(seconds: Int64, text: String) throws {
        let time = CivilTime(unixSeconds: seconds)
        #expect(time.rfc3339 == text)
        let parsed = try #require(CivilTime(rfc3339: text))
        #expect(parsed.unixSeconds == seconds)
    }

    @Test func agreesWithFoundationOverManyInstants() {
        var random = SplitMix64(seed: 7)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for _ in 0..<2_000 {
            let seconds = Int64(random.next() % 8_000_000_000) - 2_000_000_000
            let parts = calendar.dateComponents(
                [.year, .month, .day, .hour, .minute, .second],
                from: Date(timeIntervalSince1970: TimeInterval(seconds))
            )
            let time = CivilTime(unixSeconds: seconds)
            #expect(
                [time.year, time.month, time.day, time.hour, time.minute, time.second]
                    == [parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second]
            )
            #expect(time.unixSeconds == seconds)
        }
    }

    @Test(arguments: [
        "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T06:39:29",
        "2026-11-30 06:39:29Z", "２０２６-11-30T06:39:29Z", "",
    ])
    func refusesAnythingElse(text: String) {
        #expect(CivilTime(rfc3339: text) == nil)
    }
}
