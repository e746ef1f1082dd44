public import ProximaCore

/// The `config` object of a CCID transport plugin in the manifest. Every member is optional:
///
/// ```json
/// { "devices": ["072f:2200", "04e6:5810"], "pollPeriodMs": 100, "transferTimeoutMs": 5000, "readerIDPrefix": "ccid/" }
/// ```
///
/// - `devices`: `VID:PID` pairs (hex) of the readers to use; omitted: every USB interface of class `0B` (smart card).
/// - `pollPeriodMs`: how often an idle slot is asked whether a card is there (PC_to_RDR_GetSlotStatus). 10…10,000;
///   default 100.
/// - `transferTimeoutMs`: how long one bulk transfer may take (a card's answer, time extensions aside). 10…60,000;
///   default 5,000.
/// - `rescanPeriodMs`: how often the USB device list is read again for readers plugged in (or back in) since, beside
///   libusb's hotplug callbacks, which find them at once where udev delivers events (not in a container without udevd).
///   100…60,000; default 1,000.
/// - `readerIDPrefix`: reader ids are this prefix and the reader name; default the plugin id and `/`.
public struct CCIDConfiguration: Hashable, Sendable {
    public struct DeviceID: Hashable, Sendable, CustomStringConvertible {
        public var vendor: UInt16
        public var product: UInt16
        public init(vendor: UInt16, product: UInt16) {
            self.vendor = vendor
            self.product = product
        }
        public var description: String { hex(vendor) + ":" + hex(product) }
        private func hex(_ value: UInt16) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: 4 - text.count) + text
        }
    }

    public var devices: [DeviceID]
    public var pollPeriod: Duration
    public var transferTimeout: Duration
    public var rescanPeriod: Duration
    public var readerIDPrefix: String?

    public init(
        devices: [DeviceID] = [],
        pollPeriod: Duration = .milliseconds(100),
        transferTimeout: Duration = .seconds(5),
        rescanPeriod: Duration = .seconds(1),
        readerIDPrefix: String? = nil
    ) {
        self.devices = devices
        self.pollPeriod = pollPeriod
        self.transferTimeout = transferTimeout
        self.rescanPeriod = rescanPeriod
        self.readerIDPrefix = readerIDPrefix
    }

    /// - Throws: `ProximaError.invalidManifest` naming the JSON path and what was expected.
    public init(json: JSONValue, path: String) throws {
        var object = try StrictObject(json, at: path, errorCode: .invalidManifest)
        let decoder = object
        let devices = try object.optionalArray("devices") { value, elementPath in
            let text = try decoder.decodeString(value, at: elementPath)
            let parts = text.split(separator: ":")
            guard parts.count == 2, parts.allSatisfy({ $0.count == 4 }), let vendor = UInt16(parts[0], radix: 16),
                let product = UInt16(parts[1], radix: 16)
            else {
                throw ProximaError(.invalidManifest, "\(elementPath): expected VID:PID in hex, such as \"072f:2200\"")
            }
            return DeviceID(vendor: vendor, product: product)
        }
        if let devices, devices.isEmpty {
            throw object.fail("devices", "expected at least one VID:PID (omit \"devices\" to use every CCID reader)")
        }
        self.devices = devices ?? []
        pollPeriod = .milliseconds(try object.optionalInteger("pollPeriodMs", in: 10...10_000) ?? 100)
        transferTimeout = .milliseconds(try object.optionalInteger("transferTimeoutMs", in: 10...60_000) ?? 5000)
        rescanPeriod = .milliseconds(try object.optionalInteger("rescanPeriodMs", in: 100...60_000) ?? 1000)
        readerIDPrefix = try object.optionalString("readerIDPrefix", nonEmpty: false)
        try object.finish()
    }

    func selects(_ device: DeviceID) -> Bool { devices.isEmpty || devices.contains(device) }
}
