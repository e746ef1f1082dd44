import ExternalTransport
import ProximaCore
import RemoteTransport
import Testing

@Suite("Remote transport: manifest configuration and the agent's request parser")
struct RemoteConfigurationTests {
    static let base = """
        "caFile": "keys/ca.pem", "certificateFile": "keys/s.pem", "privateKeyFile": "keys/s-key.pem"
        """

    static func parse(_ members: String) throws -> RemoteConfiguration {
        let json = try JSONValue.parse(Array("{ \(members) }".utf8))
        return try RemoteConfiguration(json: json, path: "plugins[2].config", baseDirectory: "/etc/proxima")
    }

    @Test("a full configuration: files resolved, the three identity kinds, limits")
    func full() throws {
        let pin = String(repeating: "ab", count: 32)
        let configuration = try Self.parse(
            """
            "listen": "0.0.0.0:7443", \(Self.base), "callTimeoutMs": 1500, "maxFrameBytes": 4096,
            "agents": [ { "name": "lane-pc-1", "subject": "O=Proxima TEST,CN=lane-pc-1" },
                        { "name": "lane-pc-2", "dns": "Lane-PC-2.agents.example" },
                        { "name": "lane-pc-3", "spkiSHA256": "\(pin)" } ]
            """
        )
        #expect(configuration.listenHost == "0.0.0.0")
        #expect(configuration.listenPort == 7443)
        #expect(configuration.certificateAuthorityFile == "/etc/proxima/keys/ca.pem")
        #expect(configuration.privateKeyFile == "/etc/proxima/keys/s-key.pem")
        #expect(
            configuration.agents.map(\.identity) == [
                .subject("O=Proxima TEST,CN=lane-pc-1"), .dnsName("lane-pc-2.agents.example"),
                .publicKeySHA256([UInt8](repeating: 0xAB, count: 32)),
            ]
        )
        #expect(configuration.session.callTimeout == .milliseconds(1500))
        #expect(configuration.session.maximumFrameBytes == 4096)
    }

    @Test("IPv6 listen addresses in brackets, a CRL file resolved; endpoints parse [IPv6]:port and print it back")
    func ipv6AndRevocationList() throws {
        let configuration = try Self.parse(
            #""listen": "[::]:7443", \#(Self.base), "crlFile": "keys/crl.pem", \#(Self.agent)"#
        )
        #expect(configuration.listenHost == "::")
        #expect(configuration.listenPort == 7443)
        #expect(configuration.revocationListFile == "/etc/proxima/keys/crl.pem")
        #expect(try Self.parse(#""listen": "127.0.0.1:1", \#(Self.base), \#(Self.agent)"#).revocationListFile == nil)
        let endpoint = try #require(RemoteEndpoint(parsing: "[fd00::1]:7443"))
        #expect(endpoint.host == "fd00::1")
        #expect(endpoint.port == 7443)
        #expect(endpoint.description == "[fd00::1]:7443")
        #expect(RemoteEndpoint(parsing: "::1:7443") == nil, "an IPv6 address needs brackets")
        #expect(RemoteEndpoint(parsing: "[]:7443") == nil)
        #expect(RemoteEndpoint(parsing: "[lane-pc]:7443") == nil)
        #expect(RemoteEndpoint(parsing: "store.example:7443")?.description == "store.example:7443")
    }

    /// Transmit requests, and whether the fast reader takes them (else the general parser does).
    static let transmitPayloads: [(String, Bool)] = [
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000}"#, true),
        (#"{"type":"transmit","id":123456789012345678,"reader":"r 1","apdu":"00a4040000","timeoutMs":1}"#, true),
        (#"{"type":"transmit","id":1234567890123456789,"reader":"r","apdu":"00A40400","timeoutMs":5}"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000,"x":1}"#, false),
        (#"{ "type": "transmit", "id": 7, "reader": "lane-1", "apdu": "00A4040000", "timeoutMs": 5000 }"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane\u002d1","apdu":"00A4040000","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00 A4 04 00","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":07,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":0,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A404","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A4040","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":7,"reader":"","apdu":"00A4040000","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A4040000","timeoutMs":600001}"#, false),
        (#"{"type":"transmit","id":7.5,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000}"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000"#, false),
        (#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000}}"#, false),
    ]

    @Test("the fast transmit reader takes only the kernel's own form, and reads it as the general parser does")
    func canonicalTransmitMatchesGeneralParser() throws {
        for (text, fast) in Self.transmitPayloads {
            let payload = Array(text.utf8)
            let direct = AgentRequest.parseCanonicalTransmit(payload)
            #expect((direct != nil) == fast, "\(text)")
            let general = try? AgentRequest.parseMessage(payload)
            if let direct { #expect(direct == general, "\(text)") }
            #expect((try? AgentRequest.parse(payload)) == general, "\(text)")
        }
        for cut in 0..<Self.transmitPayloads[0].0.utf8.count {
            #expect(AgentRequest.parseCanonicalTransmit(Array(Self.transmitPayloads[0].0.utf8.prefix(cut))) == nil)
        }
    }

    @Test("the transmit answer written directly is the JSON encoder's, byte for byte")
    func transmitResultMatchesEncoder() throws {
        let response: [UInt8] = [0x01, 0x02, 0xAB, 0x90, 0x00]
        let direct = AgentMessage.transmitResult(42, response)
        let encoded = DriverFrame.encode(
            .object([("type", .string("result")), ("id", .integer(42)), ("apdu", .string(response.hexString))])
        )
        #expect(direct == encoded)
        #expect(
            try DriverMessage.parse(Array(direct.dropFirst(4)))
                == .result(id: 42, body: try JSONValue.parse(Array(direct.dropFirst(4))))
        )
    }

    static let agent = #""agents": [ { "name": "a", "dns": "a.example" } ]"#

    /// A configuration, and the JSON path its error must name.
    static let invalid: [(String, String)] = [
        // A missing member is reported at the object that lacks it.
        (#"\#(base), \#(agent)"#, "plugins[2].config"),
        (#""listen": "localhost:7443", \#(base), \#(agent)"#, "plugins[2].config.listen"),
        (#""listen": "::1:7443", \#(base), \#(agent)"#, "plugins[2].config.listen"),
        (#""listen": "[localhost]:7443", \#(base), \#(agent)"#, "plugins[2].config.listen"),
        (#""listen": "127.0.0.1:70000", \#(base), \#(agent)"#, "plugins[2].config.listen"),
        (#""listen": "127.0.0.1:1", "caFile": "x", "certificateFile": "y", \#(agent)"#, "plugins[2].config"),
        (#""listen": "127.0.0.1:1", \#(base), "agents": []"#, "plugins[2].config.agents"),
        (
            #""listen": "127.0.0.1:1", \#(base), "agents": [ { "name": "a", "dns": "a.x" }, { "name": "a", "dns": "b.x" } ]"#,
            "plugins[2].config.agents[1].name"
        ),
        (
            #""listen": "127.0.0.1:1", \#(base), "agents": [ { "name": "a", "dns": "a.x", "subject": "CN=a" } ]"#,
            "plugins[2].config.agents[0]"
        ),
        (#""listen": "127.0.0.1:1", \#(base), "agents": [ { "name": "a" } ]"#, "plugins[2].config.agents[0]"),
        (
            #""listen": "127.0.0.1:1", \#(base), "agents": [ { "name": "a", "spkiSHA256": "abcd" } ]"#,
            "plugins[2].config.agents[0].spkiSHA256"
        ),
        (
            #""listen": "127.0.0.1:1", \#(base), "agents": [ { "name": "a b", "dns": "a.x" } ]"#,
            "plugins[2].config.agents[0].name"
        ),
        (#""listen": "127.0.0.1:1", \#(base), \#(agent), "callTimeoutMs": 0"#, "plugins[2].config.callTimeoutMs"),
        (#""listen": "127.0.0.1:1", \#(base), \#(agent), "tls": "1.2""#, "plugins[2].config.tls"),
    ]

    @Test("invalid configurations name their JSON path", arguments: invalid)
    func invalidConfiguration(members: String, path: String) {
        do {
            _ = try Self.parse(members)
            Issue.record("accepted: \(members)")
        } catch let error as ProximaError {
            #expect(error.code == .invalidManifest)
            #expect(error.jsonPath == path, "\(error.pathAndReason)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("the kernel's requests parse; hostile frames are errors naming the member")
    func requests() throws {
        func parse(_ text: String) throws -> AgentRequest { try AgentRequest.parse(Array(text.utf8)) }
        #expect(
            try parse(#"{"type":"hello","protocol":"1.0","kernel":{"name":"proxima","version":"0.1"}}"#)
                == .hello(version: DriverProtocolVersion(major: 1, minor: 0))
        )
        #expect(
            try parse(#"{"type":"transmit","id":7,"reader":"lane-1","apdu":"00A4040000","timeoutMs":5000}"#)
                == .transmit(id: 7, reader: "lane-1", apdu: [0, 0xA4, 4, 0, 0], timeoutMilliseconds: 5000)
        )
        #expect(
            try parse(#"{"type":"connect","id":1,"reader":"r","exclusive":true}"#)
                == .connect(id: 1, reader: "r", exclusive: true, timeoutMilliseconds: 5000)
        )
        #expect(try parse(#"{"type":"bye","reason":"go"}"#) == .bye(reason: "go"))
        for hostile in [
            #"{"type":"transmit","id":0,"reader":"r","apdu":"00A40400"}"#,
            #"{"type":"transmit","id":1,"reader":"r","apdu":"00A4"}"#,
            #"{"type":"transmit","id":1,"reader":"r","apdu":"zz"}"#,
            #"{"type":"launch","id":1}"#,
            #"[1,2,3]"#,
            #"{"type":"connect","id":1}"#,
        ] {
            #expect(throws: ProximaError.self, "\(hostile)") { try parse(hostile) }
        }
    }
}
