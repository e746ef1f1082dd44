public import ProximaCore

/// The `config` object of a libnfc transport plugin in the manifest. Every member is optional:
///
/// ```json
/// {
///   "devices": ["pn532_uart:/dev/ttyS0", "pn532_uart:/dev/ttyUSB0:115200", "pn53x_usb:002:005"],
///   "modulations": ["iso14443A", "iso14443B"],
///   "pollPeriodMs": 100,
///   "apduTimeoutMs": 2000,
///   "readerIDPrefix": "nfc/"
/// }
/// ```
///
/// - `devices`: libnfc connstrings, one reader each (`pn532_uart:PORT[:SPEED]`, `pn532_i2c:…`, `pn53x_usb:BUS:DEV`,
///   `acr122_usb:…`). Omitted: the devices `nfc_list_devices` finds when the transport starts (libnfc only scans
///   serial ports with `allow_intrusive_scan` in `/etc/nfc/libnfc.conf`, so name UART boards here). An empty list
///   is refused, since it would select nothing.
/// - `modulations`: what to poll for, in order: `iso14443A` and/or `iso14443B`, both at 106 kbps. Default both.
/// - `pollPeriodMs`: how often an idle device looks for a card, or checks that the card is still there
///   (`nfc_initiator_target_is_present`). 10…10,000; default 100.
/// - `apduTimeoutMs`: how long one APDU may take (`nfc_initiator_transceive_bytes`'s timeout). 10…60,000; default
///   2,000.
/// - `readerIDPrefix`: what reader ids start with; a reader's id is this prefix and the connstring. Default: the
///   plugin id and `/`.
public struct LibNFCConfiguration: Hashable, Sendable {
    /// What a device polls for.
    public enum Modulation: String, Hashable, Sendable, CaseIterable {
        case iso14443A
        case iso14443B
    }

    /// Connstrings; empty means scan.
    public var devices: [String]
    public var modulations: [Modulation]
    public var pollPeriod: Duration
    public var apduTimeout: Duration
    /// The prefix of reader ids; `nil` means the plugin id and `/`.
    public var readerIDPrefix: String?

    public init(
        devices: [String] = [],
        modulations: [Modulation] = Modulation.allCases,
        pollPeriod: Duration = .milliseconds(100),
        apduTimeout: Duration = .seconds(2),
        readerIDPrefix: String? = nil
    ) {
        self.devices = devices
        self.modulations = modulations
        self.pollPeriod = pollPeriod
        self.apduTimeout = apduTimeout
        self.readerIDPrefix = readerIDPrefix
    }

    /// Reads the plugin's `config` object; unknown members are errors.
    ///
    /// - Parameters:
    ///   - json: the `config` value.
    ///   - path: its JSON path in the manifest (`plugins[1].config`), for error messages.
    /// - Throws: `ProximaError.invalidManifest` naming the JSON path and what was expected.
    public init(json: JSONValue, path: String) throws {
        var object = try StrictObject(json, at: path, errorCode: .invalidManifest)
        let decoder = object
        let devices = try object.optionalArray("devices") { value, elementPath in
            let connstring = try decoder.decodeString(value, at: elementPath)
            // libnfc's nfc_connstring is a 1024-byte buffer; a connstring names a driver, then a colon.
            guard connstring.utf8.count < 1024, connstring.contains(":") else {
                throw ProximaError(
                    .invalidManifest,
                    "\(elementPath): expected a libnfc connstring such as \"pn532_uart:/dev/ttyS0\""
                )
            }
            return connstring
        }
        if let devices, devices.isEmpty {
            throw object.fail("devices", "expected at least one connstring (omit \"devices\" to scan)")
        }
        if let devices, Set(devices).count != devices.count {
            throw object.fail("devices", "a connstring is listed twice")
        }
        self.devices = devices ?? []
        let choices = Modulation.allCases.map(\.rawValue)
        let modulations = try object.optionalArray("modulations") { value, elementPath in
            let name = try decoder.decodeString(value, at: elementPath)
            guard let modulation = Modulation(rawValue: name) else {
                throw ProximaError(
                    .invalidManifest,
                    "\(elementPath): expected one of \(choices.map { "\"\($0)\"" }.joined(separator: ", "))"
                )
            }
            return modulation
        }
        if let modulations, modulations.isEmpty {
            throw object.fail("modulations", "expected at least one modulation (omit it to poll for both)")
        }
        self.modulations = modulations ?? Modulation.allCases
        pollPeriod = .milliseconds(try object.optionalInteger("pollPeriodMs", in: 10...10_000) ?? 100)
        apduTimeout = .milliseconds(try object.optionalInteger("apduTimeoutMs", in: 10...60_000) ?? 2000)
        readerIDPrefix = try object.optionalString("readerIDPrefix", nonEmpty: false)
        try object.finish()
    }
}
