internal import CNFC
public import ProximaCore
internal import Synchronization

/// The libnfc transport: NFC devices libnfc drives directly (PN532 boards on a UART, PN533 / ACR122U on USB), without
/// pcscd, so it has no 16-reader ceiling.
///
/// **Readers.** Each connstring of ``LibNFCConfiguration/devices`` is one reader, declared up front and reported
/// `.appeared` when ``run()`` starts; without `devices`, ``run()`` reports what `nfc_list_devices` finds then. A
/// reader's id is ``LibNFCConfiguration/readerIDPrefix`` (default: the plugin id and `/`) and the connstring. A
/// device that cannot be opened, or stops answering, is reported `.fault` and reopened with backoff (100 ms doubling
/// to 2 s) until it answers, then `.recovered` (see ``LibNFCDevice``).
///
/// **Threads.** Every device has a serial queue of its own on which all its libnfc calls run (libnfc blocks, and a
/// device's handle must not be entered twice), so no blocking call runs on Swift's cooperative pool and devices
/// never wait for each other. Cancelling ``run()`` closes every device (`nfc_close`, `nfc_exit`) and finishes
/// ``events``.
///
/// **Cards.** A device polls for ISO/IEC 14443-A and/or -B cards (106 kbps) every
/// ``LibNFCConfiguration/pollPeriod``, reports `.cardPresent` / `.cardRemoved`, and ``connect(to:options:)`` waits for
/// a card and returns a ``LibNFCCardChannel`` with its UID, ATS and technology.
///
/// **ACR122U.** libnfc drives it as `acr122_usb` (connstring `acr122_usb:BUS:DEV`, or by scan). Linux's `pn533_usb`
/// kernel module claims the reader first: blacklist it (`echo "blacklist pn533_usb" >
/// /etc/modprobe.d/blacklist-pn533.conf`, then unplug the reader), and stop pcscd from taking it (remove it from
/// libccid's list, or stop pcscd). Not tested on hardware.
public final class LibNFCTransport: Transport {
    public let id: String
    public let configuration: LibNFCConfiguration
    public let events: AsyncStream<ReaderEvent>

    /// Events kept for a slow reader of ``events``: they come per device and card presence, never per APDU.
    public static let eventBufferSize = 4096
    /// The most devices a scan reports.
    public static let maximumScannedDevices = 64

    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let devices = Mutex<[ReaderID: LibNFCDevice]>([:])
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - id: the plugin id from the manifest (`ReaderInfo.transport`, and the default reader id prefix).
    ///   - configuration: which devices, what to poll for, how long an APDU may take.
    public init(id: String, configuration: LibNFCConfiguration) {
        self.id = id
        self.configuration = configuration
        let (events, eventContinuation) = AsyncStream.makeStream(
            of: ReaderEvent.self,
            bufferingPolicy: .bufferingNewest(Self.eventBufferSize)
        )
        self.events = events
        self.eventContinuation = eventContinuation
        for connstring in configuration.devices { addDevice(connstring) }
    }

    /// Registers the device at `connstring` (not started yet).
    @discardableResult
    private func addDevice(_ connstring: String) -> LibNFCDevice {
        let reader = readerID(forConnstring: connstring)
        let device = LibNFCDevice(
            reader: reader,
            connstring: connstring,
            configuration: configuration,
            events: eventContinuation
        )
        devices.withLock { $0[reader] = device }
        return device
    }

    /// The configured devices' readers; `nil` when devices are found by scanning.
    public var declaredReaders: [ReaderInfo]? {
        configuration.devices.isEmpty ? nil : configuration.devices.map(readerInfo(forConnstring:))
    }

    /// The id of the reader for the device at `connstring`.
    public func readerID(forConnstring connstring: String) -> ReaderID {
        ReaderID((configuration.readerIDPrefix ?? id + "/") + connstring)
    }

    private func readerInfo(forConnstring connstring: String) -> ReaderInfo {
        ReaderInfo(
            id: readerID(forConnstring: connstring),
            name: connstring,
            transport: id,
            supportsExtendedLength: false
        )
    }

    /// Opens and polls every device until cancelled; finishes ``events`` when it returns.
    ///
    /// - Throws: `ProximaError.pluginFailed` when called a second time.
    public func run() async throws {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            throw ProximaError(.pluginFailed, "libnfc transport \"\(id)\": run() was called twice")
        }
        if configuration.devices.isEmpty {
            for connstring in Self.scan() { addDevice(connstring) }
        }
        let running = devices.withLock { $0.values.sorted { $0.reader < $1.reader } }
        for device in running {
            eventContinuation.yield(.appeared(readerInfo(forConnstring: device.connstring)))
            device.start()
        }
        let never = AsyncStream<Void> { _ in }
        for await _ in never {}
        for device in running { await device.stop() }
        eventContinuation.finish()
    }

    /// `nfc_list_devices` on a context of its own.
    static func scan() -> [String] {
        var context: OpaquePointer? = nil
        nfc_init(&context)
        guard let context else { return [] }
        defer { nfc_exit(context) }
        // nfc_connstring is char[1024]: one flat buffer, read back 1024 bytes per device.
        let size = MemoryLayout<nfc_connstring>.size
        var buffer = [UInt8](repeating: 0, count: size * maximumScannedDevices)
        let found = buffer.withUnsafeMutableBytes { raw in
            nfc_list_devices(
                context,
                raw.baseAddress?.assumingMemoryBound(to: nfc_connstring.self),
                maximumScannedDevices
            )
        }
        return (0..<min(found, maximumScannedDevices)).map { index in
            let entry = buffer[(index * size)..<((index + 1) * size)]
            return String(decoding: entry.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    public func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        try await openChannel(to: reader)
    }

    /// ``connect(to:options:)`` with the concrete channel type: waits for a card in the device's field.
    ///
    /// - Throws: `ProximaError` `readerVanished` (unknown reader, or the transport stopped), `readerFaulted`,
    ///   `cancelled`.
    public func openChannel(to reader: ReaderID) async throws -> LibNFCCardChannel {
        guard let device = devices.withLock({ $0[reader] }) else {
            throw ProximaError(.readerVanished, "libnfc transport \"\(id)\" has no reader \(reader)", reader: reader)
        }
        let card = try await device.acquireCard()
        return LibNFCCardChannel(device: device, card: card)
    }
}
