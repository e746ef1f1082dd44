internal import CLibUSB
internal import Dispatch
internal import ProximaCore
internal import ProximaSystem
internal import Synchronization

/// The bulk pipes of a claimed CCID interface through libusb's synchronous transfers; blocking, so only used on the
/// device's queue.
struct LibUSBPipe: CCIDBulkPipe {
    let handle: OpaquePointer
    let interfaceNumber: Int32
    let bulkOut: UInt8
    let bulkIn: UInt8
    let timeoutMilliseconds: UInt32
    let commands: CommandTracker
    var buffer: [UInt8]

    mutating func write(_ message: [UInt8]) throws {
        // Once an exchange was cancelled, only PC_to_RDR_Abort goes out (its bSeq is the one the ABORT request named).
        try commands.willWrite(message)
        var message = message
        var transferred: Int32 = 0
        let status = message.withUnsafeMutableBufferPointer { bytes in
            libusb_bulk_transfer(
                handle,
                bulkOut,
                bytes.baseAddress,
                Int32(bytes.count),
                &transferred,
                timeoutMilliseconds
            )
        }
        guard status == 0 else { throw LibUSBStatus(rawValue: status) }
        guard Int(transferred) == message.count else { throw LibUSBStatus.io }
    }

    mutating func read() throws -> [UInt8] {
        var transferred: Int32 = 0
        let (handle, bulkIn, timeout) = (handle, bulkIn, timeoutMilliseconds)
        let status = buffer.withUnsafeMutableBufferPointer { bytes in
            libusb_bulk_transfer(handle, bulkIn, bytes.baseAddress, Int32(bytes.count), &transferred, timeout)
        }
        guard status == 0 else { throw LibUSBStatus(rawValue: status) }
        return Array(buffer.prefix(Int(max(0, transferred))))
    }

    func sendAbortRequest(slot: UInt8, sequence: UInt8) throws {
        try LibUSBPipe.sendAbortRequest(handle, interfaceNumber, slot: slot, sequence: sequence)
    }

    /// The class-specific ABORT request (CCID Rev 1.1 §5.3.1) on the control pipe, 1 s at most.
    static func sendAbortRequest(_ handle: OpaquePointer, _ interfaceNumber: Int32, slot: UInt8, sequence: UInt8) throws
    {
        let status = libusb_control_transfer(
            handle,
            0x21,
            0x01,
            UInt16(sequence) << 8 | UInt16(slot),
            UInt16(truncatingIfNeeded: interfaceNumber),
            nil,
            0,
            1000
        )
        guard status >= 0 else { throw LibUSBStatus(rawValue: status) }
    }
}

/// Which command is on the wire, so a cancellation on another thread can abort it (CCID §5.3.1): the slot, the
/// `bSeq` the abort will carry (the last one written, plus one), whether the ABORT request was sent. Its state sits
/// behind a `Mutex`, with the interface's handle while it is open: ``CCIDDevice`` clears it under the lock before
/// closing, so a control transfer never runs on a closed handle.
final class CommandTracker: Sendable {
    private struct State {
        var handle: UnsafeSendableDevice?
        var interfaceNumber: Int32 = 0
        /// The slot of the exchange running, if any, and its token (so a late cancellation of an exchange that ended
        /// cannot abort the next one).
        var activeSlot: UInt8?
        var activeToken: UInt64 = 0
        var lastToken: UInt64 = 0
        var nextSequence: [UInt8: UInt8] = [:]
        var cancelled = false
    }

    private let state = Mutex(State())

    func opened(_ handle: OpaquePointer?, interfaceNumber: Int32) {
        state.withLock {
            $0.handle = handle.map(UnsafeSendableDevice.init(pointer:))
            $0.interfaceNumber = interfaceNumber
            $0.nextSequence = [:]
        }
    }

    /// A token for one exchange, taken before it is queued.
    func newToken() -> UInt64 {
        state.withLock { state in
            state.lastToken += 1
            return state.lastToken
        }
    }

    func begin(slot: Int, token: UInt64) {
        state.withLock {
            $0.activeSlot = UInt8(truncatingIfNeeded: slot)
            $0.activeToken = token
            $0.cancelled = false
        }
    }

    /// Ends the exchange; returns whether it was cancelled (the ABORT request then went out).
    @discardableResult
    func end() -> Bool {
        state.withLock { state in
            defer {
                state.activeSlot = nil
                state.cancelled = false
            }
            return state.cancelled
        }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func willWrite(_ message: [UInt8]) throws {
        guard message.count >= CCID.headerLength else { return }
        try state.withLock { state in
            if state.cancelled && message[0] != CCID.Command.abort.rawValue {
                throw ProximaError(.cancelled, "the exchange on slot \(message[5]) was cancelled")
            }
            state.nextSequence[message[5]] = message[6] &+ 1
        }
    }

    /// Sends the ABORT request for the exchange running on `slot`, if it still runs; the exchange then sends
    /// PC_to_RDR_Abort with the same `bSeq`.
    func cancel(slot: Int, token: UInt64) {
        state.withLock { state in
            guard let handle = state.handle, state.activeSlot == UInt8(truncatingIfNeeded: slot),
                state.activeToken == token, !state.cancelled,
                let sequence = state.nextSequence[UInt8(truncatingIfNeeded: slot)]
            else { return }
            state.cancelled = true
            try? LibUSBPipe.sendAbortRequest(
                handle.pointer,
                state.interfaceNumber,
                slot: UInt8(truncatingIfNeeded: slot),
                sequence: sequence
            )
        }
    }
}

/// What a slot found: one card presence.
struct CCIDCard: Sendable {
    var generation: UInt64
    var atr: [UInt8]
}

/// One USB CCID reader (an interface of class `0B`), all its libusb calls on a serial queue of its own.
///
/// The queue's tick opens and claims the interface (`LIBUSB_ERROR_BUSY`: another driver or process, such as pcscd's
/// libccid, holds it; the reader is faulted until it is free), then asks each slot for its status every poll period
/// while no channel uses it; a card found is powered (IccPowerOn) and its ATR kept. A link failure closes the handle,
/// reports the fault once, and the tick reopens with backoff (100 ms doubling to 2 s). `LIBUSB_ERROR_NO_DEVICE`
/// means unplugged: the slots are reported vanished and the device stops.
final class CCIDDevice: Sendable {
    static let minimumReopenDelay = Duration.milliseconds(100)
    static let maximumReopenDelay = Duration.seconds(2)

    let name: String
    let slotReaders: [ReaderID]
    let descriptor: CCIDClassDescriptor
    let configuration: CCIDConfiguration
    let queue: DispatchQueue
    private let device: UnsafeSendableDevice
    private let interfaceNumber: Int32
    private let bulkOut: UInt8
    private let bulkIn: UInt8
    private let interruptIn: UInt8?
    private let events: AsyncStream<ReaderEvent>.Continuation

    private struct Link {
        var handle: OpaquePointer?
        var pipe: LibUSBPipe?
        var watcher: SlotChangeWatcher?
        var exchanges: [CCIDSlotExchange]
        var reopenDelay = CCIDDevice.minimumReopenDelay
    }

    private typealias Waiter = CheckedContinuation<CCIDCard, any Error>

    private struct Slot {
        var card: CCIDCard?
        var generation: UInt64 = 0
        var inUse = false
        var waiters: [Waiter] = []
    }

    private struct Shared {
        var slots: [Slot]
        var fault: String?
        /// What a connect to the faulted reader throws: `readerBusy` when another driver holds the interface.
        var faultCode = ProximaError.Code.readerFaulted
        var stopped = false
        var vanished = false
    }

    private let link: Mutex<Link>
    private let shared: Mutex<Shared>
    private let commands = CommandTracker()
    /// Where a cancellation sends the ABORT request: not the device's queue, which waits in the transfer.
    private let controlQueue: DispatchQueue

    init(
        name: String,
        slotReaders: [ReaderID],
        device: OpaquePointer,
        interfaceNumber: Int32,
        bulkOut: UInt8,
        bulkIn: UInt8,
        interruptIn: UInt8?,
        descriptor: CCIDClassDescriptor,
        configuration: CCIDConfiguration,
        events: AsyncStream<ReaderEvent>.Continuation
    ) {
        self.name = name
        self.slotReaders = slotReaders
        self.device = UnsafeSendableDevice(pointer: libusb_ref_device(device))
        self.interfaceNumber = interfaceNumber
        self.bulkOut = bulkOut
        self.bulkIn = bulkIn
        self.interruptIn = interruptIn
        self.descriptor = descriptor
        self.configuration = configuration
        self.events = events
        queue = DispatchQueue(label: "ccid:\(name)", qos: .userInitiated)
        controlQueue = DispatchQueue(label: "ccid-control:\(name)", qos: .userInitiated)
        let exchanges = slotReaders.indices.map { index in
            CCIDSlotExchange(
                slot: UInt8(index),
                descriptor: descriptor,
                readerName: name,
                reader: slotReaders[index]
            )
        }
        link = Mutex(Link(exchanges: exchanges))
        shared = Mutex(Shared(slots: slotReaders.map { _ in Slot() }))
    }

    deinit { libusb_unref_device(device.pointer) }

    func start() { queue.async { self.tick() } }

    /// Whether the reader was unplugged (its transport finds it anew on a rescan once it is back).
    var isVanished: Bool { shared.withLock { $0.vanished } }

    /// Stops the loop, fails the waiters, releases and closes the interface after whatever runs on the queue.
    func stop() async {
        let waiters = shared.withLock { shared -> [Waiter] in
            shared.stopped = true
            defer { for index in shared.slots.indices { shared.slots[index].waiters = [] } }
            return shared.slots.flatMap(\.waiters)
        }
        let error = ProximaError(.readerVanished, "CCID transport stopped")
        for waiter in waiters { waiter.resume(throwing: error) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.link.withLock { self.close(&$0) }
                continuation.resume()
            }
        }
    }

    private func close(_ link: inout Link) {
        // The watcher's transfer uses the handle: it ends first.
        link.watcher?.stop()
        link.watcher = nil
        commands.opened(nil, interfaceNumber: interfaceNumber)
        if let handle = link.handle {
            _ = libusb_release_interface(handle, interfaceNumber)
            libusb_close(handle)
        }
        link.handle = nil
        link.pipe = nil
    }

    // MARK: The loop (on the queue)

    private func tick() {
        guard !shared.withLock({ $0.stopped || $0.vanished }) else { return }
        let delay = link.withLock { step(&$0) }
        let (seconds, attoseconds) = delay.components
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))) {
            self.tick()
        }
    }

    /// Opens the reader if it is closed, then looks at `slots` (all of them when `nil`).
    private func step(_ link: inout Link, slots: [Int]? = nil) -> Duration {
        if link.pipe == nil {
            if let (failure, code) = open(&link) { return failed(&link, failure, code: code) }
            link.reopenDelay = Self.minimumReopenDelay
            let recovered = shared.withLock { shared -> Bool in
                defer { shared.fault = nil }
                return shared.fault != nil
            }
            if recovered { for reader in slotReaders { events.yield(.recovered(reader)) } }
        }
        for slot in slots ?? Array(slotReaders.indices) where slotReaders.indices.contains(slot) {
            let (inUse, hasCard) = shared.withLock { ($0.slots[slot].inUse, $0.slots[slot].card != nil) }
            if inUse { continue }
            do {
                let state = try withSlot(&link, slot) { exchange, pipe in try exchange.slotStatus(over: &pipe) }
                let present = state == .active || state == .inactive
                if present && !hasCard {
                    let atr = try withSlot(&link, slot) { exchange, pipe in try exchange.powerOn(over: &pipe) }
                    cardFound(slot: slot, atr: atr)
                } else if !present && hasCard {
                    cardLeft(slot: slot)
                }
            } catch let status as LibUSBStatus {
                return linkFailed(&link, status, step: "GetSlotStatus")
            } catch let error as ProximaError where error.code == .cardRemoved || error.code == .cardTimeout {
                if hasCard { cardLeft(slot: slot) }
            } catch {
                return failed(&link, "GetSlotStatus: \(error)")
            }
        }
        return configuration.pollPeriod
    }

    /// A NotifySlotChange arrived: look at the slots whose bit says "changed" now rather than at the next poll.
    private func slotsChanged(_ slots: [Int]) {
        guard !shared.withLock({ $0.stopped || $0.vanished }) else { return }
        link.withLock { link in
            guard link.pipe != nil else { return }
            _ = step(&link, slots: slots)
        }
    }

    /// Runs `body` on slot `slot`'s exchange and the pipe, and keeps what they became (the next `bSeq`, the buffer),
    /// whether it returns or throws.
    private func withSlot<T>(
        _ link: inout Link,
        _ slot: Int,
        _ body: (inout CCIDSlotExchange, inout LibUSBPipe) throws -> T
    ) throws -> T {
        guard var pipe = link.pipe else { throw LibUSBStatus.noDevice }
        var exchange = link.exchanges[slot]
        defer {
            link.exchanges[slot] = exchange
            link.pipe = pipe
        }
        return try body(&exchange, &pipe)
    }

    /// The usbfs node of the device, `/dev/bus/usb/BBB/DDD`, which a process holding the reader has open.
    var devicePath: String {
        func digits(_ value: UInt8) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, 3 - text.count)) + text
        }
        return
            "/dev/bus/usb/\(digits(libusb_get_bus_number(device.pointer)))/\(digits(libusb_get_device_address(device.pointer)))"
    }

    /// Opens the device and claims the interface; returns why not, or `nil`.
    private func open(_ link: inout Link) -> (String, ProximaError.Code)? {
        var handle: OpaquePointer? = nil
        let opened = LibUSBStatus(rawValue: libusb_open(device.pointer, &handle))
        guard opened == .success, let handle else { return ("libusb_open failed with \(opened)", opened.errorCode) }
        let claimed = LibUSBStatus(rawValue: libusb_claim_interface(handle, interfaceNumber))
        guard claimed == .success else {
            libusb_close(handle)
            if claimed == .busy {
                let node = devicePath
                let holders = ProcessTable.holders(of: node)
                let holder =
                    holders.isEmpty
                    ? "another driver or process holds the reader (pcscd's libccid, or a second Proxima?)"
                    : "held by " + holders.map(\.description).joined(separator: ", ")
                return ("libusb_claim_interface on \(node) failed with \(claimed): \(holder)", .readerBusy)
            }
            return ("libusb_claim_interface failed with \(claimed)", .readerFaulted)
        }
        link.handle = handle
        commands.opened(handle, interfaceNumber: interfaceNumber)
        let (seconds, attoseconds) = configuration.transferTimeout.components
        link.pipe = LibUSBPipe(
            handle: handle,
            interfaceNumber: interfaceNumber,
            bulkOut: bulkOut,
            bulkIn: bulkIn,
            timeoutMilliseconds: UInt32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000),
            commands: commands,
            buffer: [UInt8](repeating: 0, count: max(descriptor.maximumMessageLength, 271))
        )
        if let interruptIn {
            let watcher = SlotChangeWatcher(
                handle: handle,
                endpoint: interruptIn,
                slots: slotReaders.count,
                label: "ccid-interrupt:\(name)"
            ) { [weak self] slots in
                guard let self else { return }
                self.queue.async { self.slotsChanged(slots) }
            }
            watcher.start()
            link.watcher = watcher
        }
        return nil
    }

    private func linkFailed(_ link: inout Link, _ status: LibUSBStatus, step: String) -> Duration {
        if status == .noDevice {
            close(&link)
            vanish()
            return .seconds(3600)
        }
        return failed(&link, "\(step) failed with \(status)")
    }

    private func vanish() {
        let waiters = shared.withLock { shared -> [Waiter] in
            shared.vanished = true
            defer { for index in shared.slots.indices { shared.slots[index] = Slot() } }
            return shared.slots.flatMap(\.waiters)
        }
        for reader in slotReaders { events.yield(.vanished(reader)) }
        let error = ProximaError(.readerVanished, "CCID reader \(name) was unplugged")
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    private func failed(
        _ link: inout Link,
        _ reason: String,
        code: ProximaError.Code = .readerFaulted
    ) -> Duration {
        close(&link)
        let delay = link.reopenDelay
        link.reopenDelay = min(link.reopenDelay * 2, Self.maximumReopenDelay)
        let (first, removed, waiters) = shared.withLock { shared -> (Bool, [Int], [Waiter]) in
            let first = shared.fault == nil
            shared.fault = reason
            shared.faultCode = code
            var removed: [Int] = []
            var waiters: [Waiter] = []
            for index in shared.slots.indices {
                if shared.slots[index].card != nil { removed.append(index) }
                shared.slots[index].card = nil
                waiters += shared.slots[index].waiters
                shared.slots[index].waiters = []
            }
            return (first, removed, waiters)
        }
        for index in removed { events.yield(.cardRemoved(slotReaders[index])) }
        if first { for reader in slotReaders { events.yield(.fault(reader, reason: reason)) } }
        let error = ProximaError(.readerFaulted, "CCID reader \(name): \(reason)")
        for waiter in waiters { waiter.resume(throwing: error) }
        return delay
    }

    private func cardFound(slot: Int, atr: [UInt8]) {
        let handover = shared.withLock { shared -> (Waiter, CCIDCard)? in
            shared.slots[slot].generation += 1
            let card = CCIDCard(generation: shared.slots[slot].generation, atr: atr)
            shared.slots[slot].card = card
            guard !shared.slots[slot].inUse, !shared.slots[slot].waiters.isEmpty else { return nil }
            shared.slots[slot].inUse = true
            return (shared.slots[slot].waiters.removeFirst(), card)
        }
        events.yield(.cardPresent(slotReaders[slot]))
        if let (waiter, card) = handover { waiter.resume(returning: card) }
    }

    private func cardLeft(slot: Int) {
        let left = shared.withLock { shared -> Bool in
            defer { shared.slots[slot].card = nil }
            return shared.slots[slot].card != nil
        }
        if left { events.yield(.cardRemoved(slotReaders[slot])) }
    }

    // MARK: Connections

    /// Waits until a card is in slot `slot` and no other channel uses it, and takes it.
    func acquireCard(slot: Int) async throws -> CCIDCard {
        let reader = slotReaders[slot]
        return try await withCheckedThrowingContinuation { (continuation: Waiter) in
            let immediate = shared.withLock { shared -> Result<CCIDCard, ProximaError>? in
                if shared.stopped || shared.vanished {
                    return .failure(ProximaError(.readerVanished, "CCID reader \(name) is gone", reader: reader))
                }
                if let fault = shared.fault {
                    return .failure(ProximaError(shared.faultCode, "CCID reader \(name): \(fault)", reader: reader))
                }
                if let card = shared.slots[slot].card, !shared.slots[slot].inUse {
                    shared.slots[slot].inUse = true
                    return .success(card)
                }
                shared.slots[slot].waiters.append(continuation)
                return nil
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }

    func release(slot: Int) {
        let handover = shared.withLock { shared -> (Waiter, CCIDCard)? in
            guard let card = shared.slots[slot].card, !shared.slots[slot].waiters.isEmpty else {
                shared.slots[slot].inUse = false
                return nil
            }
            return (shared.slots[slot].waiters.removeFirst(), card)
        }
        if let (waiter, card) = handover { waiter.resume(returning: card) }
    }

    /// One APDU to card presence `generation` of `slot`, on the queue. Cancelling the task aborts the exchange
    /// (the ABORT request from the control queue, then PC_to_RDR_Abort on the queue) and throws `cancelled`.
    func transmit(_ command: [UInt8], slot: Int, generation: UInt64) async throws -> ResponseAPDU {
        let token = commands.newToken()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<ResponseAPDU, ProximaError>, Never>) in
                queue.async {
                    continuation.resume(
                        returning: self.link.withLock { link in
                            self.commands.begin(slot: slot, token: token)
                            defer { self.commands.end() }
                            return self.exchange(command, slot: slot, generation: generation, &link)
                        }
                    )
                }
            }
        } onCancel: {
            controlQueue.async { self.commands.cancel(slot: slot, token: token) }
        }
        return try result.get()
    }

    /// PC_to_RDR_Abort (after the ABORT request, unless a cancellation sent it) once an exchange timed out or was
    /// cancelled; a reader that cannot abort is closed and reopened.
    private func abort(_ link: inout Link, slot: Int, after step: String) -> ProximaError? {
        let controlRequestSent = commands.isCancelled
        do {
            try withSlot(&link, slot) { exchange, pipe in
                try exchange.abort(controlRequestSent: controlRequestSent, over: &pipe)
            }
            return nil
        } catch let status as LibUSBStatus {
            _ = linkFailed(&link, status, step: "PC_to_RDR_Abort after \(step)")
            return ProximaError(
                status == .noDevice ? .readerVanished : .readerFaulted,
                "PC_to_RDR_Abort after \(step) on \(name) failed with \(status)",
                reader: slotReaders[slot]
            )
        } catch {
            _ = failed(&link, "PC_to_RDR_Abort after \(step) failed: \(error)")
            return ProximaError(
                .readerFaulted,
                "PC_to_RDR_Abort after \(step) on \(name) failed: \(error)",
                reader: slotReaders[slot]
            )
        }
    }

    private func exchange(_ command: [UInt8], slot: Int, generation: UInt64, _ link: inout Link) -> Result<
        ResponseAPDU, ProximaError
    > {
        let reader = slotReaders[slot]
        guard shared.withLock({ $0.slots[slot].card?.generation == generation }) else {
            return .failure(ProximaError(.cardRemoved, "the card left \(name)", reader: reader))
        }
        guard link.pipe != nil else {
            return .failure(ProximaError(.readerFaulted, "CCID reader \(name) is closed", reader: reader))
        }
        do {
            let bytes = try withSlot(&link, slot) { exchange, pipe in try exchange.transmit(command, over: &pipe) }
            guard bytes.count >= 2 else {
                return .failure(
                    ProximaError(
                        .malformedData,
                        "the card answered \(bytes.count) bytes, no status word",
                        reader: reader
                    )
                )
            }
            return .success(
                ResponseAPDU(
                    data: Array(bytes.dropLast(2)),
                    status: StatusWord(bytes[bytes.count - 2], bytes[bytes.count - 1])
                )
            )
        } catch let status as LibUSBStatus {
            if status == .timeout {
                if let failure = abort(&link, slot: slot, after: "a timed-out XfrBlock") { return .failure(failure) }
                if commands.isCancelled {
                    return .failure(
                        ProximaError(.cancelled, "the APDU on \(name) was cancelled (aborted)", reader: reader)
                    )
                }
                return .failure(
                    ProximaError(
                        .cardTimeout,
                        "XfrBlock on \(name) timed out (\(status)); the command was aborted (PC_to_RDR_Abort)",
                        reader: reader
                    )
                )
            }
            _ = linkFailed(&link, status, step: "XfrBlock")
            return .failure(
                ProximaError(
                    status == .noDevice ? .readerVanished : .readerFaulted,
                    "XfrBlock on \(name) failed with \(status)",
                    reader: reader
                )
            )
        } catch let error as ProximaError {
            if commands.isCancelled {
                if let failure = abort(&link, slot: slot, after: "a cancelled XfrBlock") { return .failure(failure) }
                return .failure(ProximaError(.cancelled, "the APDU on \(name) was cancelled (aborted)", reader: reader))
            }
            if error.code == .cardRemoved { cardLeft(slot: slot) }
            return .failure(error.at(reader: reader))
        } catch {
            return .failure(ProximaError(.transmitFailed, "XfrBlock on \(name): \(error)", reader: reader))
        }
    }
}

/// Waits for RDR_to_PC_NotifySlotChange on a reader's interrupt endpoint, on a queue of its own (the transfer blocks),
/// in 200 ms slices so ``stop()`` takes effect; calls `changed` with the slots whose "changed" bit is set (each slot
/// has its own bit pair, §6.3.1), so a card in one slot of a multi-slot reader does not make the others be asked.
final class SlotChangeWatcher: Sendable {
    private let handle: UnsafeSendableDevice
    private let endpoint: UInt8
    private let slots: Int
    private let queue: DispatchQueue
    private let changed: @Sendable ([Int]) -> Void
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(
        handle: OpaquePointer,
        endpoint: UInt8,
        slots: Int,
        label: String,
        changed: @escaping @Sendable ([Int]) -> Void
    ) {
        self.handle = UnsafeSendableDevice(pointer: handle)
        self.endpoint = endpoint
        self.slots = slots
        self.changed = changed
        queue = DispatchQueue(label: label)
    }

    func start() {
        queue.async { [self] in
            var buffer = [UInt8](repeating: 0, count: 64)
            while !stopped.load(ordering: .relaxed) {
                var transferred: Int32 = 0
                let status = buffer.withUnsafeMutableBufferPointer {
                    libusb_interrupt_transfer(
                        handle.pointer,
                        endpoint,
                        $0.baseAddress,
                        Int32($0.count),
                        &transferred,
                        200
                    )
                }
                if status == LibUSBStatus.timeout.rawValue { continue }
                guard status == 0 else { break }
                let message = Array(buffer.prefix(Int(max(0, transferred))))
                if let change = try? CCIDSlotChange(bytes: message, slots: slots) {
                    let slots = change.changed.indices.filter { change.changed[$0] }
                    if !slots.isEmpty { changed(slots) }
                }
            }
            finished.signal()
        }
    }

    /// Ends the loop and waits for it (at most one 200 ms slice).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        finished.wait()
    }
}

/// A `libusb_device *` with a reference held, passed between threads: libusb's device objects are thread-safe.
struct UnsafeSendableDevice: @unchecked Sendable {
    let pointer: OpaquePointer
}
