internal import CNFC
internal import Dispatch
internal import ProximaCore
internal import Synchronization

/// What a device found in its field: one card presence.
struct LibNFCCard: Sendable {
    /// Counts the card arrivals on this device; a channel is valid for one.
    var generation: UInt64
    var technology: CardTechnology
    var uid: [UInt8]
    /// Type A: the ATS with its length byte TL first (as ``ProximaCore/CardChannel/ats`` has it); Type B: empty.
    var ats: [UInt8]
    /// The PC/SC Part 3 pseudo-ATR built from the ATS historical bytes or the ATQB.
    var atr: [UInt8]
}

/// One libnfc device (a PN532 board, an ACR122U, …), driven on a serial queue of its own, since every libnfc call
/// blocks.
///
/// **Loop.** ``start()`` schedules a *tick* on the queue that reschedules itself: a closed device is opened
/// (`nfc_open`, `nfc_initiator_init`, no infinite select, automatic ISO 14443-4 activation); an open one with no card
/// polls (`nfc_initiator_select_passive_target` per configured modulation), and one with a card checks it is still
/// there (`nfc_initiator_target_is_present`), every ``LibNFCConfiguration/pollPeriod``. While a channel is open the
/// tick leaves the device alone; the channel's APDUs run on the same queue, so libnfc is never entered twice.
///
/// **Faults.** A link failure (``LibNFCStatus/meansLinkFailure``: a closed terminal, a mute chip, a refused or
/// corrupted frame that a presence probe cannot get past either) closes the device and reports `.fault`; the tick
/// then reopens it after 100 ms, doubling up to 2 s, and reports `.recovered` once it answers again. Callers waiting
/// for a card fail with `readerFaulted`.
///
/// Shared state sits behind a `Mutex`; the libnfc handles sit behind another one that only code on the queue takes
/// (so it is never contended).
final class LibNFCDevice: Sendable {
    static let minimumReopenDelay = Duration.milliseconds(100)
    static let maximumReopenDelay = Duration.seconds(2)
    /// The receive buffer of one APDU: a short response (258 bytes) with room for drivers that pass longer ones.
    static let receiveBufferSize = 4096

    let reader: ReaderID
    let connstring: String
    let configuration: LibNFCConfiguration
    let queue: DispatchQueue
    /// The queue as a task executor (SE-0417): a tap's body that prefers it runs on the device's thread, and each
    /// transmit then calls libnfc right there instead of hopping onto the queue and back.
    let taskExecutor: LibNFCTaskExecutor
    /// APDUs that called libnfc right on the device's thread, and those that hopped onto it (for the tests and the
    /// benchmark: a tap run by the kernel should never hop).
    let directTransmits = Atomic<Int>(0)
    let hoppedTransmits = Atomic<Int>(0)
    private let events: AsyncStream<ReaderEvent>.Continuation

    /// libnfc's handles; only taken on ``queue``.
    private struct Link {
        var context: OpaquePointer?
        var device: OpaquePointer?
        var reopenDelay = LibNFCDevice.minimumReopenDelay
        var receiveBuffer = [UInt8](repeating: 0, count: LibNFCDevice.receiveBufferSize)
    }

    private typealias Waiter = CheckedContinuation<LibNFCCard, any Error>

    private struct Shared {
        var card: LibNFCCard?
        var generation: UInt64 = 0
        var inUse = false
        /// Why the device is faulted; `nil` when healthy (or never opened yet).
        var fault: String?
        var stopped = false
        var waiters: [(key: UInt64, continuation: Waiter)] = []
        var cancelledWaiters: Set<UInt64> = []
        var nextWaiter: UInt64 = 0
    }

    private let link = Mutex(Link())
    private let shared = Mutex(Shared())

    init(
        reader: ReaderID,
        connstring: String,
        configuration: LibNFCConfiguration,
        events: AsyncStream<ReaderEvent>.Continuation
    ) {
        self.reader = reader
        self.connstring = connstring
        self.configuration = configuration
        self.events = events
        queue = DispatchQueue(label: "libnfc:\(connstring)", qos: .userInitiated)
        taskExecutor = LibNFCTaskExecutor(queue: queue)
    }

    /// Starts the device's loop.
    func start() {
        queue.async { self.tick() }
    }

    /// Stops the loop, fails every caller waiting for a card with `readerVanished`, and closes the device (after
    /// whatever runs on the queue); returns once it is closed.
    func stop() async {
        let waiters = shared.withLock { shared in
            shared.stopped = true
            defer { shared.waiters = [] }
            return shared.waiters.map(\.continuation)
        }
        let error = ProximaError(.readerVanished, "libnfc transport stopped", reader: reader)
        for waiter in waiters { waiter.resume(throwing: error) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.link.withLock { link in
                    if let device = link.device { nfc_close(device) }
                    if let context = link.context { nfc_exit(context) }
                    link.device = nil
                    link.context = nil
                }
                continuation.resume()
            }
        }
    }

    // MARK: The loop (on the queue)

    private func tick() {
        guard !shared.withLock({ $0.stopped }) else { return }
        let delay = link.withLock { link in step(&link) }
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { self.tick() }
    }

    private func step(_ link: inout Link) -> Duration {
        guard let device = link.device else { return open(&link) }
        let (inUse, hasCard) = shared.withLock { ($0.inUse, $0.card != nil) }
        if inUse { return configuration.pollPeriod }
        if hasCard {
            let status = LibNFCStatus(rawValue: nfc_initiator_target_is_present(device, nil))
            if status.meansLinkFailure {
                return failed(&link, "nfc_initiator_target_is_present failed with \(status)")
            }
            if status != .success { cardLeft() }
        } else if let failure = poll(device) {
            return failed(&link, failure)
        }
        return configuration.pollPeriod
    }

    private func open(_ link: inout Link) -> Duration {
        if link.context == nil {
            var context: OpaquePointer? = nil
            nfc_init(&context)
            link.context = context
        }
        guard let context = link.context else { return failed(&link, "nfc_init failed (out of memory?)") }
        guard let device = nfc_open(context, connstring) else {
            return failed(&link, "nfc_open found no working device at '\(connstring)'")
        }
        let initialised = LibNFCStatus(rawValue: nfc_initiator_init(device))
        guard initialised == .success else {
            nfc_close(device)
            return failed(&link, "nfc_initiator_init failed with \(initialised)")
        }
        // Polling is ours: one activation attempt per call, not libnfc's endless select.
        _ = nfc_device_set_property_bool(device, NP_INFINITE_SELECT, false)
        _ = nfc_device_set_property_bool(device, NP_AUTO_ISO14443_4, true)
        link.device = device
        link.reopenDelay = Self.minimumReopenDelay
        let recovered = shared.withLock { shared -> Bool in
            defer { shared.fault = nil }
            return shared.fault != nil
        }
        if recovered { events.yield(.recovered(reader)) }
        if let failure = poll(device) { return failed(&link, failure) }
        return configuration.pollPeriod
    }

    /// Looks for a card with each modulation; returns why the link failed, or `nil`.
    private func poll(_ device: OpaquePointer) -> String? {
        for modulation in configuration.modulations {
            var target = nfc_target()
            let type = modulation == .iso14443A ? NMT_ISO14443A : NMT_ISO14443B
            let found = nfc_initiator_select_passive_target(
                device,
                nfc_modulation(nmt: type, nbr: NBR_106),
                nil,
                0,
                &target
            )
            if found > 0 {
                cardFound(Self.card(from: target, modulation: modulation))
                return nil
            }
            let status = LibNFCStatus(rawValue: found)
            if found < 0, status.meansLinkFailure {
                return "nfc_initiator_select_passive_target failed with \(status)"
            }
        }
        return nil
    }

    /// Closes the device, reports the fault once, fails the waiters; returns the delay before reopening.
    private func failed(_ link: inout Link, _ reason: String) -> Duration {
        if let device = link.device { nfc_close(device) }
        link.device = nil
        let delay = link.reopenDelay
        link.reopenDelay = min(link.reopenDelay * 2, Self.maximumReopenDelay)
        let (firstReport, hadCard, waiters) = shared.withLock { shared -> (Bool, Bool, [Waiter]) in
            let first = shared.fault == nil
            shared.fault = reason
            let hadCard = shared.card != nil
            shared.card = nil
            defer { shared.waiters = [] }
            return (first, hadCard, shared.waiters.map(\.continuation))
        }
        if hadCard { events.yield(.cardRemoved(reader)) }
        if firstReport { events.yield(.fault(reader, reason: reason)) }
        let error = ProximaError(.readerFaulted, "libnfc device '\(connstring)': \(reason)", reader: reader)
        for waiter in waiters { waiter.resume(throwing: error) }
        return delay
    }

    private func cardFound(_ found: LibNFCCard) {
        let waiter = shared.withLock { shared -> (Waiter, LibNFCCard)? in
            shared.generation += 1
            var card = found
            card.generation = shared.generation
            shared.card = card
            guard !shared.inUse, !shared.waiters.isEmpty else { return nil }
            shared.inUse = true
            return (shared.waiters.removeFirst().continuation, card)
        }
        events.yield(.cardPresent(reader))
        if let (continuation, card) = waiter { continuation.resume(returning: card) }
    }

    private func cardLeft() {
        let left = shared.withLock { shared -> Bool in
            defer { shared.card = nil }
            return shared.card != nil
        }
        if left { events.yield(.cardRemoved(reader)) }
    }

    static func card(from target: nfc_target, modulation: LibNFCConfiguration.Modulation) -> LibNFCCard {
        switch modulation {
        case .iso14443A:
            let info = target.nti.nai
            let uid = withUnsafeBytes(of: info.abtUid) { Array($0.prefix(min(Int(info.szUidLen), $0.count))) }
            let body = withUnsafeBytes(of: info.abtAts) { Array($0.prefix(min(Int(info.szAtsLen), $0.count))) }
            let ats = body.isEmpty ? [] : [UInt8(truncatingIfNeeded: body.count + 1)] + body
            return LibNFCCard(
                generation: 0,
                technology: .iso14443A,
                uid: uid,
                ats: ats,
                atr: PseudoATR.make(historicalBytes: PseudoATR.historicalBytes(ofATS: ats))
            )
        case .iso14443B:
            let info = target.nti.nbi
            let pupi = withUnsafeBytes(of: info.abtPupi) { Array($0) }
            let application = withUnsafeBytes(of: info.abtApplicationData) { Array($0) }
            let protocolInfo = withUnsafeBytes(of: info.abtProtocolInfo) { Array($0) }
            return LibNFCCard(
                generation: 0,
                technology: .iso14443B,
                uid: pupi,
                ats: [],
                atr: PseudoATR.make(historicalBytes: application + protocolInfo + [0x00])
            )
        }
    }

    // MARK: Connections

    /// Waits until a card is in the field and no other channel uses it, and takes it.
    ///
    /// - Throws: `ProximaError` `readerFaulted` (the device is faulted, or faults while waiting), `readerVanished`
    ///   (the transport stopped), `cancelled`.
    func acquireCard() async throws -> LibNFCCard {
        let key = shared.withLock { shared -> UInt64 in
            shared.nextWaiter += 1
            return shared.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                let immediate = shared.withLock { shared -> Result<LibNFCCard, ProximaError>? in
                    if shared.stopped {
                        return .failure(ProximaError(.readerVanished, "libnfc transport stopped", reader: reader))
                    }
                    if shared.cancelledWaiters.remove(key) != nil {
                        return .failure(ProximaError(.cancelled, "cancelled while waiting for a card", reader: reader))
                    }
                    if let fault = shared.fault {
                        return .failure(
                            ProximaError(.readerFaulted, "libnfc device '\(connstring)': \(fault)", reader: reader)
                        )
                    }
                    if let card = shared.card, !shared.inUse {
                        shared.inUse = true
                        return .success(card)
                    }
                    shared.waiters.append((key, continuation))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = shared.withLock { shared -> Waiter? in
                guard let index = shared.waiters.firstIndex(where: { $0.key == key }) else {
                    shared.cancelledWaiters.insert(key)
                    return nil
                }
                return shared.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: ProximaError(.cancelled, "cancelled while waiting for a card", reader: reader))
        }
    }

    /// Gives the card back (a channel closed): to the next caller waiting for it, or to the poll loop.
    func release() {
        let handover = shared.withLock { shared -> (Waiter, LibNFCCard)? in
            guard let card = shared.card, !shared.waiters.isEmpty else {
                shared.inUse = false
                return nil
            }
            return (shared.waiters.removeFirst().continuation, card)
        }
        if let (waiter, card) = handover { waiter.resume(returning: card) }
    }

    /// One APDU to card presence `generation`, on the queue: called right there when the task already runs on it
    /// (it prefers ``taskExecutor``), else after a hop onto it.
    func transmit(_ command: [UInt8], generation: UInt64) async throws -> ResponseAPDU {
        if taskExecutor.isCurrent {
            directTransmits.add(1, ordering: .relaxed)
            return try link.withLock { transceive(command, generation: generation, &$0) }.get()
        }
        hoppedTransmits.add(1, ordering: .relaxed)
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<ResponseAPDU, ProximaError>, Never>) in
            queue.async {
                continuation.resume(
                    returning: self.link.withLock { self.transceive(command, generation: generation, &$0) }
                )
            }
        }
        return try result.get()
    }

    /// `nfc_initiator_transceive_bytes`, and what its failure means: a card that left (`cardRemoved`), a card that
    /// did not answer (`cardTimeout`), a link glitch the device survived (`transmitFailed`), or a device that no
    /// longer answers (`readerFaulted`, and the device is closed for reopening).
    private func transceive(_ command: [UInt8], generation: UInt64, _ link: inout Link) -> Result<
        ResponseAPDU, ProximaError
    > {
        guard shared.withLock({ $0.card?.generation == generation }) else {
            return .failure(ProximaError(.cardRemoved, "the card left the field of '\(connstring)'", reader: reader))
        }
        guard let device = link.device else {
            return .failure(ProximaError(.readerFaulted, "libnfc device '\(connstring)' is closed", reader: reader))
        }
        let (seconds, attoseconds) = configuration.apduTimeout.components
        let timeout = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        let received = command.withUnsafeBufferPointer { send in
            link.receiveBuffer.withUnsafeMutableBufferPointer { receive in
                nfc_initiator_transceive_bytes(
                    device,
                    send.baseAddress,
                    send.count,
                    receive.baseAddress,
                    receive.count,
                    timeout
                )
            }
        }
        if received >= 2 {
            let count = Int(received)
            let response = ResponseAPDU(
                data: Array(link.receiveBuffer[..<(count - 2)]),
                status: StatusWord(link.receiveBuffer[count - 2], link.receiveBuffer[count - 1])
            )
            return .success(response)
        }
        let status = LibNFCStatus(rawValue: received)
        let step = "nfc_initiator_transceive_bytes"
        // The device still works if a presence probe gets through; the probe also tells a card that left.
        let probe = LibNFCStatus(rawValue: nfc_initiator_target_is_present(device, nil))
        if probe.meansLinkFailure {
            let reason = "\(step) failed with \(status), and the presence probe with \(probe)"
            _ = failed(&link, reason)
            return .failure(ProximaError(.readerFaulted, "libnfc device '\(connstring)': \(reason)", reader: reader))
        }
        if probe != .success {
            cardLeft()
            return .failure(
                ProximaError(.cardRemoved, "the card left the field of '\(connstring)' (\(status))", reader: reader)
            )
        }
        if received >= 0 {
            return .failure(
                ProximaError(.malformedData, "the card answered \(received) bytes, no status word", reader: reader)
            )
        }
        if status == .rfTransmission || status == .timeout {
            return .failure(
                ProximaError(
                    .cardTimeout,
                    "\(step) failed with \(status) on '\(connstring)': the card did not answer within \(configuration.apduTimeout)",
                    reader: reader
                )
            )
        }
        return .failure(status.proximaError(step: step, connstring: connstring, reader: reader))
    }
}

/// PC/SC Part 3 §3.1.3.2.3 pseudo-ATRs for contactless cards, so a channel's ATR reads as a PC/SC reader's would:
/// `3B 8n 80 01 <n historical bytes> TCK`.
enum PseudoATR {
    static func make(historicalBytes: [UInt8]) -> [UInt8] {
        let historical = Array(historicalBytes.prefix(15))
        var atr: [UInt8] = [0x3B, 0x80 | UInt8(historical.count), 0x80, 0x01] + historical
        var check: UInt8 = 0
        for byte in atr.dropFirst() { check ^= byte }
        atr.append(check)
        return atr
    }

    /// The historical bytes of an ATS (TL first): after T0 and the interface bytes TA, TB, TC that T0 announces.
    static func historicalBytes(ofATS ats: [UInt8]) -> [UInt8] {
        guard ats.count >= 2 else { return [] }
        let length = min(Int(ats[0]), ats.count)
        let format = ats[1]
        var start = 2
        for bit in [UInt8(0x10), 0x20, 0x40] where format & bit != 0 { start += 1 }
        guard start < length else { return [] }
        return Array(ats[start..<length])
    }
}

/// A libnfc device's serial queue as a `TaskExecutor`: the jobs of a task that prefers it run on the queue, between
/// the device's own ticks, so libnfc is still entered from one thread at a time. (`DispatchSerialQueue` is not
/// available on Linux, hence this adapter; the PC/SC transport's reader executor has the same shape.)
final class LibNFCTaskExecutor: TaskExecutor {
    private let queue: DispatchQueue
    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    init(queue: DispatchQueue) {
        self.queue = queue
        queue.setSpecific(key: Self.key, value: ObjectIdentifier(self))
    }

    /// Whether the current thread runs this queue.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(self) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
