import ExternalTransport
import ProximaCore
import Testing

@Suite("Driver protocol: frames, messages, log masking, limits")
struct DriverFrameTests {
    static let hello: [UInt8] = Array(#"{"type":"hello","protocol":"1.0","driver":{"name":"d","version":"2"}}"#.utf8)

    @Test("the transmit frame written directly is the JSON encoder's, byte for byte, and parses back")
    func transmitFrameMatchesEncoder() throws {
        for (reader, apdu, id) in [
            ("0", [0x00, 0x84, 0x00, 0x00, 0x08], 1), ("r\"ü\\1", [0xFF, 0x0A], 9_007_199_254),
        ]
            as [(String, [UInt8], Int64)]
        {
            let direct = KernelMessage.transmit(
                id: id,
                encodedReader: KernelMessage.encodedReader(reader),
                apdu: apdu,
                timeoutMilliseconds: 5000
            )
            let encoded = DriverFrame.encode(
                .object([
                    ("type", .string("transmit")), ("id", .integer(id)), ("reader", .string(reader)),
                    ("apdu", .string(apdu.hexString)), ("timeoutMs", .integer(5000)),
                ])
            )
            #expect(direct == encoded)
            var decoder = DriverFrame.Decoder()
            decoder.append(direct)
            let payload = try #require(try decoder.next())
            let json = try JSONValue.parse(payload)
            #expect(json["reader"] == .string(reader))
            #expect(json["apdu"] == .string(apdu.hexString))
        }
    }

    @Test("a frame is the 4-byte big-endian length and the JSON text")
    func encodesLengthPrefix() {
        let frame = DriverFrame.encode(.object([("type", .string("cardPresent")), ("reader", .string("0"))]))
        let text = #"{"type":"cardPresent","reader":"0"}"#
        #expect(frame == [0, 0, 0, UInt8(text.utf8.count)] + Array(text.utf8))
        #expect(DriverFrame.encode(payload: Array(repeating: 0x20, count: 0x01_02_03)).prefix(4) == [0, 1, 2, 3])
    }

    @Test("frames split at every byte boundary decode to the same payloads")
    func decodesAnySplit() throws {
        let second = Array(#"{"type":"cardRemoved","reader":"r"}"#.utf8)
        let stream = DriverFrame.encode(payload: Self.hello) + DriverFrame.encode(payload: second)
        for split in 0...stream.count {
            var decoder = DriverFrame.Decoder()
            var payloads: [[UInt8]] = []
            decoder.append(stream[..<split])
            while let payload = try decoder.next() { payloads.append(payload) }
            decoder.append(stream[split...])
            while let payload = try decoder.next() { payloads.append(payload) }
            try decoder.finish()
            #expect(payloads == [Self.hello, second], "split at \(split)")
        }
    }

    @Test("an oversized length is refused before its payload arrives, and the decoder stays failed")
    func refusesOversized() {
        var decoder = DriverFrame.Decoder(maximumPayload: 1024)
        decoder.append([0, 0, 4, 1])
        #expect(throws: DriverFrame.DecodingError.oversized(length: 1025, maximum: 1024)) { try decoder.next() }
        decoder.append(DriverFrame.encode(payload: Self.hello))
        #expect(throws: DriverFrame.DecodingError.oversized(length: 1025, maximum: 1024)) { try decoder.next() }
        #expect(decoder.bufferedCount == Self.hello.count + 4)
    }

    @Test("a zero length and a stream ending inside a frame are errors")
    func refusesEmptyAndTruncated() throws {
        var empty = DriverFrame.Decoder()
        empty.append([0, 0, 0, 0])
        #expect(throws: DriverFrame.DecodingError.empty) { try empty.next() }

        var truncated = DriverFrame.Decoder()
        truncated.append(DriverFrame.encode(payload: Self.hello).dropLast())
        #expect(try truncated.next() == nil)
        #expect(throws: DriverFrame.DecodingError.truncated(buffered: Self.hello.count + 3)) { try truncated.finish() }
    }

    @Test("driver messages parse with their members")
    func parsesMessages() throws {
        #expect(
            try DriverMessage.parse(Self.hello)
                == .hello(version: DriverProtocolVersion(major: 1, minor: 0), driverName: "d", driverVersion: "2")
        )
        let readers =
            #"{"type":"readers","readers":[{"id":"0","name":"A","extendedLength":true},{"id":"1","name":"B"}]}"#
        #expect(
            try DriverMessage.parse(Array(readers.utf8))
                == .readers([
                    DriverReader(id: "0", name: "A", extendedLength: true), DriverReader(id: "1", name: "B"),
                ])
        )
        let error = #"{"type":"error","id":9,"code":"cardRemoved","message":"gone"}"#
        #expect(try DriverMessage.parse(Array(error.utf8)) == .error(id: 9, code: "cardRemoved", message: "gone"))
        let result = #"{"type":"result","id":3,"apdu":"9000","later":"ignored"}"#
        guard case .result(3, let body) = try DriverMessage.parse(Array(result.utf8)) else {
            Issue.record("not a result")
            return
        }
        #expect(body["apdu"] == .string("9000"))
    }

    @Test(
        "malformed messages are refused with the member that is wrong",
        arguments: [
            (#"{"type":"hello","protocol":"1","driver":{"name":"d","version":"1"}}"#, "message.protocol"),
            (#"{"type":"hello","protocol":"1.0"}"#, "message.driver"),
            (#"{"type":"readers","readers":[{"id":"0","name":"A"},{"id":"0","name":"B"}]}"#, "two readers share"),
            (#"{"type":"readerAppeared","reader":{"id":"","name":"A"}}"#, "message.reader.id"),
            (#"{"type":"result","id":0}"#, "message.id"),
            (#"{"type":"result","id":"7"}"#, "message.id"),
            (#"{"type":"teleport"}"#, "unknown message type"),
            (#"[1,2]"#, "expected an object"),
            (#"{"type":"cardPresent","reader":"0","reader":"1"}"#, "duplicate"),
            (#"{"type":"cardPresent""#, "JSON line 1"),
        ]
    )
    func refusesMalformedMessages(_ text: String, _ expected: String) {
        do {
            _ = try DriverMessage.parse(Array(text.utf8))
            Issue.record("parsed \(text)")
        } catch let error as ProximaError {
            #expect(error.code == .malformedData)
            #expect(error.pathAndReason.contains(expected), "\(error.pathAndReason)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("protocol versions parse as MAJOR.MINOR only")
    func parsesVersions() {
        #expect(DriverProtocolVersion(parsing: "1.0") == DriverProtocolVersion(major: 1, minor: 0))
        #expect(DriverProtocolVersion(parsing: "12.34") == DriverProtocolVersion(major: 12, minor: 34))
        for text in ["1", "1.0.0", "-1.0", "1.x", "", ".1", "99999.0", " 1.0"] {
            #expect(DriverProtocolVersion(parsing: text) == nil, "\(text)")
        }
    }

    @Test(
        "hex runs longer than 12 digits are masked, shorter ones and words kept",
        arguments: [
            ("PAN 5413330089600010 read", "PAN [16 hex digits masked] read"),
            ("SW 9000, ATC 0001", "SW 9000, ATC 0001"),
            ("uid 04A1B2C3D4E5F6", "uid [14 hex digits masked]"),
            ("uid 04A1B2C3D4E5", "uid 04A1B2C3D4E5"),
            ("apdu 00 A4 04 00 07 A0 00 00 00 03 10 10 00", "apdu [26 hex digits masked]"),
            ("bytes 9F:26:08:11:22:33:44:55 end", "bytes [16 hex digits masked] end"),
            ("a bad face is deadbeef", "a bad face is deadbeef"),
            ("tab\there", "tab?here"),
        ]
    )
    func masksHexRuns(_ line: String, _ expected: String) {
        #expect(DriverStderrLog.mask(line) == expected)
    }

    @Test("standard error is split into lines and rate-limited, with a count of the dropped lines")
    func limitsStandardError() {
        var log = DriverStderrLog(linesPerSecond: 2)
        let start = ContinuousClock.now
        let first = log.consume(Array("1\n2\n3\n4\n5\n6".utf8), at: start)
        let second = log.consume(Array("\n7\n".utf8), at: start + .seconds(1))
        let last = log.finish(at: start + .seconds(1))
        #expect(first == ["1", "2", "3", "4"])  // a burst of twice the rate
        #expect(second == ["(1 line dropped: over the rate limit)", "6", "7"])
        #expect(last == [])
    }

    @Test("the event limiter lets a burst through, then the sustained rate")
    func limitsEvents() {
        var limiter = RateLimiter(ratePerSecond: 10, burst: 3)
        let start = ContinuousClock.now
        var allowed: [Bool] = []
        for _ in 0..<4 { allowed.append(limiter.allow(at: start)) }
        #expect(allowed == [true, true, true, false])
        let refilled = limiter.allow(at: start + .milliseconds(100))
        let again = limiter.allow(at: start + .milliseconds(100))
        #expect(refilled && !again)
    }

    @Test("backoff doubles up to its maximum; the breaker opens at the threshold within the window")
    func backoffAndBreaker() {
        var backoff = RestartBackoff(initial: .milliseconds(100), maximum: .milliseconds(500))
        var waits: [Duration] = []
        for _ in 0..<5 { waits.append(backoff.next()) }
        #expect(waits == [100, 200, 400, 500, 500].map { Duration.milliseconds($0) })
        backoff.reset()
        #expect(backoff.next() == .milliseconds(100))

        var breaker = CircuitBreaker(threshold: 3, window: .seconds(10))
        let start = ContinuousClock.now
        var opened: [Bool] = []
        // Failures older than the window (10 s) no longer count: only 11, 12 and 13 are three within it.
        for seconds in [0, 1, 11, 12, 13] { opened.append(breaker.recordFailure(at: start + .seconds(seconds))) }
        #expect(opened == [false, false, false, false, true])
    }
}
