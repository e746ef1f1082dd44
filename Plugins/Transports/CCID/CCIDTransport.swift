internal import CLibUSB
internal import Dispatch
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
/// transfer fails with `LIBUSB_ERROR_NO_DEVICE`.
///
/// **Hotplug.** Where libusb has the hotplug capability (`LIBUSB_CAP_HAS_HOTPLUG`: its udev backend on Linux), a
/// callback registered with `libusb_hotplug_register_callback` makes a reader plugged in (or back in) be found at
/// once; an event thread of the transport's own runs `libusb_handle_events_timeout_completed`. The device list is
/// still read again every ``CCIDConfiguration/rescanPeriod`` besides: libusb's udev monitor hears only what udevd
/// rebroadcasts, and a container without udevd registers the callback but never hears an event. Under umockdev (the
/// tests) the monitor's netlink socket is emulated, so the callbacks fire.
public final class CCIDTransport: Transport {
    public let id: String
    public let configuration: CCIDConfiguration
    public let events: AsyncStream<ReaderEvent>
    /// `nil`: USB readers are found at run time.
    public var declaredReaders: [ReaderInfo]? { nil }

    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let slots = Mutex<[ReaderID: (device: CCIDDevice, slot: Int)]>([:])
    private let started = Atomic<Bool>(false)
    private let hotplugRegistered = Atomic<Bool>(false)

    /// Whether ``run()`` registered a libusb hotplug callback (libusb has the capability and accepted it).
    public var usesHotplug: Bool { hotplugRegistered.load(ordering: .relaxed) }

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
        // Wake-ups for a rescan: hotplug events and the rescan period; one pending is enough.
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let hotplug = HotplugWatcher(context: context, label: "ccid-hotplug:\(id)", wake: wake)
        hotplugRegistered.store(hotplug != nil, ordering: .relaxed)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [rescanPeriod = configuration.rescanPeriod] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: rescanPeriod)
                    wake.yield()
                }
            }
            wake.yield()
            // Ends when the task is cancelled.
            for await _ in wakes {
                for device in discover(context) where live[device.name].map(\.isVanished) ?? true {
                    live[device.name] = device
                    all.append(device)
                    start(device)
                }
            }
            group.cancelAll()
        }
        hotplug?.stop()
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
                    descriptor.exchangeLevel != .character
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

/// A libusb hotplug callback (arrivals and departures of any device) and the thread that runs libusb's event
/// handling, through which the callback is called; each event wakes the transport's rescan. `nil` from ``init`` when
/// libusb has no hotplug capability or refuses the callback. The box passed to libusb as `user_data` is retained
/// until ``stop()`` has deregistered the callback and the thread has ended.
final class HotplugWatcher: Sendable {
    private let context: UnsafeSendableDevice
    private let handle: libusb_hotplug_callback_handle
    private let box: UnsafeSendableDevice
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    private final class Box: Sendable {
        let wake: AsyncStream<Void>.Continuation
        init(wake: AsyncStream<Void>.Continuation) { self.wake = wake }
    }

    init?(context: OpaquePointer, label: String, wake: AsyncStream<Void>.Continuation) {
        guard libusb_has_capability(UInt32(LIBUSB_CAP_HAS_HOTPLUG.rawValue)) != 0 else { return nil }
        let box = Unmanaged.passRetained(Box(wake: wake))
        var handle: libusb_hotplug_callback_handle = 0
        let events = Int32(LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED.rawValue | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT.rawValue)
        let status = libusb_hotplug_register_callback(
            context,
            events,
            0,
            LIBUSB_HOTPLUG_MATCH_ANY,
            LIBUSB_HOTPLUG_MATCH_ANY,
            LIBUSB_HOTPLUG_MATCH_ANY,
            { _, _, _, userData in
                guard let userData else { return 0 }
                Unmanaged<Box>.fromOpaque(userData).takeUnretainedValue().wake.yield()
                return 0
            },
            box.toOpaque(),
            &handle
        )
        guard status == 0 else {
            box.release()
            return nil
        }
        self.context = UnsafeSendableDevice(pointer: context)
        self.handle = handle
        self.box = UnsafeSendableDevice(pointer: OpaquePointer(box.toOpaque()))
        DispatchQueue(label: label).async { [self] in
            while !stopped.load(ordering: .relaxed) {
                var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
                _ = libusb_handle_events_timeout_completed(self.context.pointer, &timeout, nil)
            }
            finished.signal()
        }
    }

    /// Deregisters the callback and waits for the event thread (at most one 200 ms slice).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        libusb_hotplug_deregister_callback(context.pointer, handle)
        finished.wait()
        Unmanaged<Box>.fromOpaque(UnsafeRawPointer(box.pointer)).release()
    }
}
