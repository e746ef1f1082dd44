internal import Foundation
package import ProximaCore
internal import Synchronization

/// The readers of one driver session as kernel readers: what the driver reports (`readers`, `readerAppeared`,
/// `readerVanished`, `cardPresent`, `cardRemoved`) becomes ``ReaderEvent``s, and a connect waits for a card the driver
/// reported, then sends `connect`. The External transport keeps one (its driver, restarted under supervision); the
/// Remote transport one per agent identity (each agent's connection, replaced when it reconnects).
///
/// At most one ``DriverConnection`` is attached at a time; ``endSession(_:reason:)`` reports every reader of it
/// vanished and fails whoever waits for a card on one with `readerVanished`.
package final class DriverReaderTable: Sendable {
    /// The plugin id (``ReaderInfo/transport``).
    package let transportID: String
    package let readerIDPrefix: String
    private let eventContinuation: AsyncStream<ReaderEvent>.Continuation
    private let state = Mutex(State())

    package struct Reader: Sendable {
        var info: ReaderInfo
        var driverID: String
        var cardPresent = false
        /// Counts `cardPresent` events, so a connect can wait for the next card.
        var generation: UInt64 = 0
    }

    private struct Waiter {
        var reader: ReaderID
        var after: UInt64
        var continuation: CheckedContinuation<(DriverConnection, Reader), any Error>
    }

    private struct State {
        var connection: DriverConnection?
        var readers: [ReaderID: Reader] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        var cancelledWaiters: Set<UInt64> = []
        var everReported: Set<ReaderID> = []
    }

    package init(transportID: String, readerIDPrefix: String, events: AsyncStream<ReaderEvent>.Continuation) {
        self.transportID = transportID
        self.readerIDPrefix = readerIDPrefix
        eventContinuation = events
    }

    /// The kernel id of the driver's reader `driverReaderID`.
    package func readerID(forDriverReader driverReaderID: String) -> ReaderID {
        ReaderID(readerIDPrefix + driverReaderID)
    }

    /// Every reader any session reported, sorted.
    package var everReported: [ReaderID] { state.withLock { $0.everReported.sorted() } }

    /// Whether `reader` belongs to this table (by its prefix).
    package func owns(_ reader: ReaderID) -> Bool { reader.rawValue.hasPrefix(readerIDPrefix) }

    /// Makes `connection` the session whose messages ``handle(_:from:)`` takes.
    package func attach(_ connection: DriverConnection) {
        state.withLock { $0.connection = connection }
    }

    /// Checks the peer's `hello`: a different protocol major is refused (a `bye`, then the session fails with
    /// `.refused`). Returns whether the session goes on.
    package static func accept(hello version: DriverProtocolVersion, on connection: DriverConnection) -> Bool {
        guard version.major == DriverProtocolVersion.current.major else {
            let reason = "the driver speaks protocol \(version), this kernel \(DriverProtocolVersion.current.major).x"
            connection.send(KernelMessage.bye(reason))
            connection.fail(DriverFault(.refused, reason))
            return false
        }
        return true
    }

    /// Applies one message of `connection`'s peer (`hello` is the caller's, see ``accept(hello:on:)``).
    package func handle(_ message: DriverMessage, from connection: DriverConnection) {
        switch message {
        case .hello:
            break  // the transport checks it (accept(hello:on:))
        case .readers(let list):
            let (gone, added) = state.withLock { state -> ([ReaderID], [ReaderInfo]) in
                guard state.connection === connection else { return ([], []) }
                let ids = Set(list.map { readerID(forDriverReader: $0.id) })
                let gone = state.readers.keys.filter { !ids.contains($0) }.sorted()
                for reader in gone { state.readers[reader] = nil }
                var added: [ReaderInfo] = []
                for reader in list {
                    let info = info(for: reader)
                    if state.readers[info.id]?.info != info {
                        state.readers[info.id] = Reader(info: info, driverID: reader.id)
                        state.everReported.insert(info.id)
                        added.append(info)
                    }
                }
                return (gone, added)
            }
            for reader in gone { readerGone(reader, connection: connection) }
            for info in added { eventContinuation.yield(.appeared(info)) }
        case .readerAppeared(let reader):
            let info = info(for: reader)
            let isNew = state.withLock { state -> Bool in
                guard state.connection === connection, state.readers[info.id]?.info != info else { return false }
                state.readers[info.id] = Reader(info: info, driverID: reader.id)
                state.everReported.insert(info.id)
                return true
            }
            if isNew { eventContinuation.yield(.appeared(info)) }
        case .readerVanished(let driverReader):
            let reader = readerID(forDriverReader: driverReader)
            guard knows(reader, connection: connection, event: "readerVanished") else { return }
            state.withLock { _ = $0.readers.removeValue(forKey: reader) }
            readerGone(reader, connection: connection)
        case .cardPresent(let driverReader):
            let reader = readerID(forDriverReader: driverReader)
            guard knows(reader, connection: connection, event: "cardPresent") else { return }
            let ready = state.withLock { state -> [(Waiter, Reader)] in
                guard var entry = state.readers[reader] else { return [] }
                entry.cardPresent = true
                entry.generation += 1
                state.readers[reader] = entry
                let due = state.waiters.filter { $0.value.reader == reader && $0.value.after < entry.generation }
                for key in due.keys { state.waiters[key] = nil }
                return due.values.map { ($0, entry) }
            }
            eventContinuation.yield(.cardPresent(reader))
            for (waiter, entry) in ready { waiter.continuation.resume(returning: (connection, entry)) }
        case .cardRemoved(let driverReader):
            let reader = readerID(forDriverReader: driverReader)
            guard knows(reader, connection: connection, event: "cardRemoved") else { return }
            state.withLock { $0.readers[reader]?.cardPresent = false }
            eventContinuation.yield(.cardRemoved(reader))
        case .result, .error:
            break  // answers go to their calls on the connection's thread
        }
    }

    private func info(for reader: DriverReader) -> ReaderInfo {
        ReaderInfo(
            id: readerID(forDriverReader: reader.id),
            name: reader.name,
            transport: transportID,
            supportsExtendedLength: reader.extendedLength
        )
    }

    /// Whether the driver reported `reader`; an event about any other reader is a lie that ends the session.
    private func knows(_ reader: ReaderID, connection: DriverConnection, event: String) -> Bool {
        let known = state.withLock { $0.connection === connection && $0.readers[reader] != nil }
        if !known { connection.fail(DriverFault(.lied, "\(event) for reader \"\(reader)\", which it did not report")) }
        return known
    }

    /// Reports `reader` gone and fails whoever waits for a card on it.
    private func readerGone(_ reader: ReaderID, connection: DriverConnection) {
        let waiters = state.withLock { state -> [Waiter] in
            let due = state.waiters.filter { $0.value.reader == reader }
            for key in due.keys { state.waiters[key] = nil }
            return Array(due.values)
        }
        eventContinuation.yield(.vanished(reader))
        let error = ProximaError(.readerVanished, "the driver reported the reader gone", reader: reader)
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }

    /// Every reader of the session leaves; calls waiting for a card fail with `readerVanished`.
    package func endSession(_ connection: DriverConnection, reason: String) {
        let (readers, waiters) = state.withLock { state -> ([ReaderID], [Waiter]) in
            guard state.connection === connection else { return ([], []) }
            state.connection = nil
            let readers = state.readers.keys.sorted()
            state.readers = [:]
            defer { state.waiters = [:] }
            return (readers, Array(state.waiters.values))
        }
        for reader in readers { eventContinuation.yield(.vanished(reader)) }
        for waiter in waiters {
            waiter.continuation.resume(
                throwing: ProximaError(
                    .readerVanished,
                    "the driver of \"\(transportID)\" stopped: \(reason)",
                    reader: waiter.reader
                )
            )
        }
    }

    /// ``connect(to:options:)`` with the concrete channel type.
    ///
    /// - Throws: `ProximaError` `readerVanished` (unknown reader, it left, or the driver failed), `cancelled`, or the
    ///   code the driver answered `connect` with.
    package func openChannel(to reader: ReaderID, options: ConnectOptions) async throws -> ExternalCardChannel {
        var seen: UInt64 = 0
        while true {
            let (connection, entry) = try await waitForCard(on: reader, after: seen)
            let body: JSONValue
            do {
                body = try await connection.call(
                    "connect",
                    [("reader", .string(entry.driverID)), ("exclusive", .bool(options.exclusive))],
                    what: "connect on reader \(reader)"
                )
            } catch let error as ProximaError where error.code == .cardRemoved {
                seen = entry.generation
                continue
            } catch let error as ProximaError {
                throw error.at(reader: reader)
            }
            let card: DriverCardInfo
            do {
                card = try DriverCardInfo(result: body, readerExtendedLength: entry.info.supportsExtendedLength)
            } catch let error as ProximaError {
                let fault = DriverFault(.malformed, "connect answer: \(error.reason)")
                connection.fail(fault)
                throw DriverConnection.vanished(fault, pluginID: transportID).at(reader: reader)
            }
            return ExternalCardChannel(reader: reader, driverReader: entry.driverID, card: card, connection: connection)
        }
    }

    private func waitForCard(on reader: ReaderID, after seen: UInt64) async throws -> (DriverConnection, Reader) {
        let key = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<(DriverConnection, Reader), ProximaError>? in
                    if state.cancelledWaiters.remove(key) != nil {
                        return .failure(ProximaError(.cancelled, "cancelled while waiting for a card", reader: reader))
                    }
                    guard let connection = state.connection, let entry = state.readers[reader] else {
                        return .failure(
                            ProximaError(
                                .readerVanished,
                                "\"\(transportID)\" has no reader \"\(reader)\" now",
                                reader: reader
                            )
                        )
                    }
                    if entry.cardPresent && entry.generation > seen { return .success((connection, entry)) }
                    state.waiters[key] = Waiter(
                        reader: reader,
                        after: max(seen, entry.generation),
                        continuation: continuation
                    )
                    return nil
                }
                if let ready { continuation.resume(with: ready.mapError { $0 as any Error }) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let waiter = state.waiters.removeValue(forKey: key) { return waiter }
                state.cancelledWaiters.insert(key)
                return nil
            }
            waiter?.continuation.resume(
                throwing: ProximaError(.cancelled, "cancelled while waiting for a card", reader: reader)
            )
        }
    }
}
