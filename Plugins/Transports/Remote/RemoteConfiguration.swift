public import ExternalTransport
public import ProximaCore

/// The `config` object of a Remote transport plugin (`"type": "remote"`): where the store kernel listens for lane-PC
/// agents, its TLS identity, and which agents may join.
///
/// ```json
/// {
///   "listen": "0.0.0.0:7443",
///   "caFile": "keys/remote-store-ca-test.pem",
///   "certificateFile": "keys/remote-server-test.pem",
///   "privateKeyFile": "keys/remote-server-test-private.pem",
///   "agents": [
///     { "name": "lane-pc-1", "subject": "O=Proxima TEST,CN=lane-pc-1" },
///     { "name": "lane-pc-2", "dns": "lane-pc-2.agents.proxima.test" },
///     { "name": "lane-pc-3", "spkiSHA256": "5d41402abc4b2a76b9719d911017c592…" }
///   ],
///   "callTimeoutMs": 5000,
///   "handshakeTimeoutMs": 5000,
///   "maxFrameBytes": 1048576,
///   "maxEventsPerSecond": 100
/// }
/// ```
///
/// - `listen` (required): `IPv4:port` or `[IPv6]:port` (`[::]:7443`); port 0 picks a free port (tests).
/// - `caFile`, `certificateFile`, `privateKeyFile` (required): PEM files, relative to the manifest's folder. The CA
///   is the only trust anchor for agents' certificates, which must carry the `clientAuth` purpose.
/// - `crlFile` (optional): a PEM file of the CA's certificate revocation list (`openssl ca -gencrl`); when given, an
///   agent whose certificate it lists is refused at the handshake (`certificate revoked`), and so is every agent once
///   the list is past its `nextUpdate`. It is read when the transport starts. Without it nothing is revoked: remove
///   the agent from `agents` (or pin agents by key) to shut one out. OCSP is not checked.
/// - `agents` (required, 1…256): who may join, each with a unique `name` (1…64 of `A-Z a-z 0-9 . _ -`; the agent's
///   readers are `<plugin id>/<name>/<agent's reader id>`) and exactly one of: `subject` (the certificate's subject
///   in RFC 2253 form, as `openssl x509 -noout -subject -nameopt RFC2253` prints it), `dns` (a subjectAltName DNS
///   name the certificate must match) or `spkiSHA256` (the SHA-256 of its SubjectPublicKeyInfo, 64 hex digits:
///   `openssl x509 -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum`). A verified certificate that
///   matches no entry is refused.
/// - `callTimeoutMs`, `handshakeTimeoutMs` (1…600 000, default 5 000), `maxFrameBytes` (64…16 MiB, default 1 MiB),
///   `maxEventsPerSecond` (1…100 000, default 100): as for the External transport; the handshake timeout bounds
///   the TLS handshake and the agent's `hello` each.
public struct RemoteConfiguration: Hashable, Sendable {
    /// One agent allowed to join, and how its certificate is recognised.
    public struct Agent: Hashable, Sendable {
        public enum Identity: Hashable, Sendable {
            case subject(String)
            case dnsName(String)
            case publicKeySHA256([UInt8])
        }

        public var name: String
        public var identity: Identity

        public init(name: String, identity: Identity) {
            self.name = name
            self.identity = identity
        }
    }

    public var listenHost: String
    public var listenPort: Int
    /// Absolute paths.
    public var certificateAuthorityFile: String
    public var certificateFile: String
    public var privateKeyFile: String
    /// The CA's revocation list (PEM), checked for every agent's certificate when set.
    public var revocationListFile: String?
    public var agents: [Agent]
    /// The session limits (timeouts, frame size, event rate), shared with the External transport's sessions.
    public var session: ExternalConfiguration

    public init(
        listenHost: String = "127.0.0.1",
        listenPort: Int = 0,
        certificateAuthorityFile: String,
        certificateFile: String,
        privateKeyFile: String,
        revocationListFile: String? = nil,
        agents: [Agent],
        session: ExternalConfiguration = ExternalConfiguration(command: "")
    ) {
        self.revocationListFile = revocationListFile
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.certificateAuthorityFile = certificateAuthorityFile
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.agents = agents
        self.session = session
    }

    static let maximumAgents = 256

    /// Reads the plugin's `config` object; unknown members are errors. Touches no file (`proxima config check`
    /// calls it too): the PEM files are read when the transport starts.
    /// - Throws: `ProximaError.invalidManifest` naming the JSON path and what was expected.
    public init(json: JSONValue, path: String, baseDirectory: String) throws {
        var object = try StrictObject(json, at: path, errorCode: .invalidManifest)
        let listen = try object.string("listen")
        guard let endpoint = RemoteEndpoint(parsing: listen),
            endpoint.isIPv6 || endpoint.host.allSatisfy({ $0.isNumber || $0 == "." })
        else {
            throw object.fail(
                "listen",
                "expected \"IPv4:port\" or \"[IPv6]:port\" such as \"0.0.0.0:7443\" or \"[::]:7443\", found "
                    + "\"\(listen.prefix(64))\""
            )
        }
        listenHost = endpoint.host
        listenPort = endpoint.port
        func file(_ key: String) throws -> String {
            let value = try object.string(key)
            if value.contains("\0") { throw object.fail(key, "the path contains a NUL character") }
            if value.hasPrefix("/") || baseDirectory.isEmpty { return value }
            return baseDirectory.hasSuffix("/") ? baseDirectory + value : baseDirectory + "/" + value
        }
        certificateAuthorityFile = try file("caFile")
        certificateFile = try file("certificateFile")
        privateKeyFile = try file("privateKeyFile")
        revocationListFile = object.has("crlFile") ? try file("crlFile") : nil
        let agentsPath = object.path(of: "agents")
        agents = try object.array("agents") { value, elementPath in try Self.agent(value, at: elementPath) }
        guard (1...Self.maximumAgents).contains(agents.count) else {
            throw ProximaError(
                .invalidManifest,
                "\(agents.count) agents, expected 1…\(Self.maximumAgents)",
                jsonPath: agentsPath
            )
        }
        var seen: Set<String> = []
        for (index, agent) in agents.enumerated() where !seen.insert(agent.name).inserted {
            let namePath = "\(agentsPath)[\(index)].name"
            throw ProximaError(
                .invalidManifest,
                "a second agent named \"\(agent.name)\"",
                jsonPath: namePath
            )
        }
        let callTimeout = try object.optionalInteger("callTimeoutMs", in: 1...600_000) ?? 5_000
        let handshakeTimeout = try object.optionalInteger("handshakeTimeoutMs", in: 1...600_000) ?? 5_000
        let frameBytes =
            try object.optionalInteger("maxFrameBytes", in: 64...(16 << 20)) ?? Int64(DriverFrame.defaultMaximumPayload)
        let events = try object.optionalInteger("maxEventsPerSecond", in: 1...100_000) ?? 100
        session = ExternalConfiguration(
            command: "",
            callTimeout: .milliseconds(callTimeout),
            handshakeTimeout: .milliseconds(handshakeTimeout),
            maximumFrameBytes: Int(frameBytes),
            maximumEventsPerSecond: Int(events)
        )
        try object.finish()
    }

    private static func agent(_ value: JSONValue, at path: String) throws -> Agent {
        var object = try StrictObject(value, at: path, errorCode: .invalidManifest)
        let name = try object.string("name")
        guard name.utf8.count <= 64, name.utf8.allSatisfy(Self.isNameByte) else {
            throw object.fail("name", "expected 1…64 characters of A-Z a-z 0-9 . _ -")
        }
        let given = ["subject", "dns", "spkiSHA256"].filter { object.has($0) }
        guard given.count == 1 else {
            throw ProximaError(
                .invalidManifest,
                "exactly one of \"subject\", \"dns\" or \"spkiSHA256\" identifies the agent"
                    + (given.isEmpty ? "" : " (found \(given.joined(separator: ", ")))"),
                jsonPath: path
            )
        }
        let identity: Agent.Identity
        switch given[0] {
        case "subject":
            let subject = try object.string("subject")
            guard subject.utf8.count <= 1024, subject.contains("=") else {
                throw object.fail("subject", "expected an RFC 2253 name such as \"O=Proxima TEST,CN=lane-pc-1\"")
            }
            identity = .subject(subject)
        case "dns":
            let name = try object.string("dns")
            guard name.utf8.count <= 253, name.utf8.allSatisfy(Self.isNameByte), !name.hasPrefix(".") else {
                throw object.fail("dns", "expected a DNS name such as \"lane-pc-1.agents.example\"")
            }
            identity = .dnsName(name.lowercased())
        default:
            let text = try object.string("spkiSHA256")
            guard text.utf8.count == 64, let digest = [UInt8](hex: text), digest.count == 32 else {
                throw object.fail("spkiSHA256", "expected the SHA-256 of the SubjectPublicKeyInfo as 64 hex digits")
            }
            identity = .publicKeySHA256(digest)
        }
        try object.finish()
        return Agent(name: name, identity: identity)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }
}

/// `host:port`, as `--connect` and `listen` take it.
public struct RemoteEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `host:port` or `[IPv6]:port` (port 0…65535, host 1…253 characters without spaces; an IPv6 address
    /// only in brackets, which are not part of ``host``); `nil` otherwise.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") && host.count > 2 {
            host = String(host.dropFirst().dropLast())
            guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), host.contains(":") else { return nil }
        } else if host.contains(":") || host.contains("[") || host.contains("]") {
            return nil  // an IPv6 address without brackets: where it ends and the port starts is ambiguous
        }
        let portText = text[text.index(after: colon)...]
        guard (1...253).contains(host.utf8.count), !host.contains(" "), !host.contains("\0"),
            (1...5).contains(portText.count), portText.allSatisfy(\.isNumber), let port = Int(portText),
            (0...65_535).contains(port)
        else { return nil }
        self.init(host: host, port: port)
    }

    /// Whether ``host`` is an IPv6 address.
    public var isIPv6: Bool { host.contains(":") }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
