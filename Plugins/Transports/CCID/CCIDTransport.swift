internal import CLibUSB
public import ProximaCore
internal import Synchronization

/// The USB CCID transport: smart-card readers (USB interface class `0B`) driven through libusb directly, without
/// pcscd and its 16-reader ceiling.
///
/// **Readers.** ``run()`` initialises a libusb context and lists the USB devices; every interface of class `0B`
/// whose device matches ``CCIDConfiguration/devices`` (all, when empty) with a CCID class descriptor at an APDU
/// exchange level becomes one reader per slot, named `VID:PID BUS-ADDRESS slot N` and reported `.appeared`. Each
/// reader has a serial queue on which all its libusb calls run (``CCIDDevice``): it claims the interface, looks at its
/// slots (GetSlotStatus) whenever RDR_to_PC_NotifySlotChange arrives on the interrupt endpoint and every poll period
/// besides, powers cards on, and carries APDUs as XfrBlocks. A reader unplugged is reported `.vanished` when its next
/// transfer fails with `LIBUSB_ERROR_NO_DEVICE`. Readers plugged in (or back in) are found by reading the device list
/// again every ``CCIDConfiguration/rescanPeriod``: libusb's hotplug callbacks need udev, which containers lack.
public final class CCIDTransport: Transport {
    public let id: String
    public let configuration: CCIDConfiguration
    public let events: AsyncStream<ReaderEvent>
    /// `nil`: USB readers are found at run time.
    public var declaredReaders: [ReaderInfo]? { nil }

    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let slots = Mutex<[ReaderID: (device: CCIDDevice, slot: Int)]>([:])
    private let started = Atomic<Bool>(false)

    public init(id: String, configuration: CCIDConfiguration) {
        self.id = id
        self.configuration = configuration
        (events, eventContinuation) = AsyncStream.makeStream(
            of: ReaderEvent.self,
            bufferingPolicy: .bufferingNewest(4096)
        )
    }

    public func readerID(forReaderNamed name: String) -> ReaderID {
        ReaderID((configuration.readerIDPrefix ?? id + "/") + name)
    }

    /// Finds the readers, runs them until cancelled, then closes them and the libusb context.
    ///
    /// - Throws: `ProximaError.pluginFailed` when libusb cannot be initialised or ``run()`` is called twice.
    public func run() async throws {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            throw ProximaError(.pluginFailed, "CCID transport \"\(id)\": run() was called twice")
        }
        var context: OpaquePointer? = nil
        let status = LibUSBStatus(rawValue: libusb_init(&context))
        guard status == .success, let context else {
            eventContinuation.finish()
            throw ProximaError(.pluginFailed, "CCID transport \"\(id)\": libusb_init failed with \(status)")
        }
        var live: [String: CCIDDevice] = [:]
        var all: [CCIDDevice] = []
        while !Task.isCancelled {
            // No udev in containers, so no hotplug events: the device list is read again every rescan period, and
            // readers plugged in (or back in) since are started.
            for device in discover(context) where live[device.name].map(\.isVanished) ?? true {
                live[device.name] = device
                all.append(device)
                start(device)
            }
            try? await Task.sleep(for: configuration.rescanPeriod)
        }
        await withTaskGroup(of: Void.self) { group in
            for device in all { group.addTask { await device.stop() } }
        }
        libusb_exit(context)
        eventContinuation.finish()
    }

    private func start(_ device: CCIDDevice) {
        for (slot, reader) in device.slotReaders.enumerated() {
            slots.withLock { $0[reader] = (device, slot) }
            eventContinuation.yield(
                .appeared(
                    ReaderInfo(
                        id: reader,
                        name: "\(device.name) slot \(slot)",
                        transport: id,
                        supportsExtendedLength: device.descriptor.exchangeLevel == .extendedAPDU
                    )
                )
            )
        }
        device.start()
    }

    private func discover(_ context: OpaquePointer) -> [CCIDDevice] {
        var list: UnsafeMutablePointer<OpaquePointer?>? = nil
        let count = libusb_get_device_list(context, &list)
        guard count > 0, let list else { return [] }
        defer { libusb_free_device_list(list, 1) }
        var found: [CCIDDevice] = []
        for index in 0..<count {
            guard let device = list[index] else { continue }
            var deviceDescriptor = libusb_device_descriptor()
            guard libusb_get_device_descriptor(device, &deviceDescriptor) == 0 else { continue }
            let deviceID = CCIDConfiguration.DeviceID(
                vendor: deviceDescriptor.idVendor,
                product: deviceDescriptor.idProduct
            )
            guard configuration.selects(deviceID) else { continue }
            var config: UnsafeMutablePointer<libusb_config_descriptor>? = nil
            guard
                libusb_get_active_config_descriptor(device, &config) == 0
                    || libusb_get_config_descriptor(device, 0, &config) == 0,
                let config
            else { continue }
            defer { libusb_free_config_descriptor(config) }
            for interfaceIndex in 0..<Int(config.pointee.bNumInterfaces) {
                let interface = config.pointee.interface[interfaceIndex]
                guard interface.num_altsetting > 0 else { continue }
                let setting = interface.altsetting[0]
                guard setting.bInterfaceClass == 0x0B else { continue }
                let extra =
                    setting.extra.map { Array(UnsafeBufferPointer(start: $0, count: Int(setting.extra_length))) } ?? []
                guard let descriptor = try? CCIDClassDescriptor(extra: extra),
                    descriptor.exchangeLevel == .shortAPDU || descriptor.exchangeLevel == .extendedAPDU
                else { continue }
                var bulkOut: UInt8? = nil
                var bulkIn: UInt8? = nil
                var interruptIn: UInt8? = nil
                for endpointIndex in 0..<Int(setting.bNumEndpoints) {
                    let endpoint = setting.endpoint[endpointIndex]
                    if endpoint.bmAttributes & 0x03 == 0x03, endpoint.bEndpointAddress & 0x80 != 0 {
                        interruptIn = endpoint.bEndpointAddress
                    }
                    guard endpoint.bmAttributes & 0x03 == 0x02 else { continue }
                    if endpoint.bEndpointAddress & 0x80 != 0 {
                        bulkIn = endpoint.bEndpointAddress
                    } else {
                        bulkOut = endpoint.bEndpointAddress
                    }
                }
                guard let bulkOut, let bulkIn else { continue }
                let bus = libusb_get_bus_number(device)
                let address = libusb_get_device_address(device)
                let name = "\(deviceID) \(bus)-\(address)"
                let readers = (0..<descriptor.slotCount).map { readerID(forReaderNamed: "\(name) slot \($0)") }
                found.append(
                    CCIDDevice(
                        name: name,
                        slotReaders: readers,
                        device: device,
                        interfaceNumber: Int32(setting.bInterfaceNumber),
                        bulkOut: bulkOut,
                        bulkIn: bulkIn,
                        interruptIn: interruptIn,
                        descriptor: descriptor,
                        configuration: configuration,
                        events: eventContinuation
                    )
                )
            }
        }
        return found
    }

    public func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        try await openChannel(to: reader)
    }

    /// ``connect(to:options:)`` with the concrete channel type: waits for a card in the slot.
    public func openChannel(to reader: ReaderID) async throws -> CCIDCardChannel {
        guard let (device, slot) = slots.withLock({ $0[reader] }) else {
            throw ProximaError(.readerVanished, "CCID transport \"\(id)\" has no reader \(reader)", reader: reader)
        }
        let card = try await device.acquireCard(slot: slot)
        return CCIDCardChannel(device: device, slot: slot, card: card)
    }
}
