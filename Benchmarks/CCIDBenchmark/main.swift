// Per-APDU overhead of the CCID transport against a bare libusb bulk write/read pair, on CCID readers emulated under
// umockdev (Tests/CCIDReaderMock), in one run:
//
//     swift build -c release --product CCIDBenchmark
//     umockdev-wrapper .build/release/CCIDBenchmark [apdus] [rounds]
//
// Two emulated readers hold the same card profile (Config/cards/pay-visa-qvsdc.json). Reader 1 is driven by a minimal
// client on libusb (libusb_bulk_transfer of a PC_to_RDR_XfrBlock with SELECT PPSE, then of the RDR_to_PC_DataBlock),
// reader 2 by the CCID transport (CCIDTransport.openChannel, then CCIDCardChannel.transmit of the same APDU).
// `rounds` times, `apdus` APDUs on each, alternating which goes first. Printed: mean microseconds per APDU of each,
// the ratio transport/raw, and the microseconds the transport adds per APDU (goal: ratio ≤ 1.10, ≤ 50 µs added).

import CCIDReaderMock
import CCIDTransport
import CLibUSB
import Foundation
import ProximaCardEmulator
import ProximaCore
import Synchronization

struct Failure: Error, CustomStringConvertible {
    var description: String
}

guard ProcessInfo.processInfo.environment["LD_PRELOAD"]?.contains("umockdev") == true else {
    print("CCIDBenchmark: run it under umockdev-wrapper")
    exit(2)
}

let arguments = CommandLine.arguments.dropFirst()
let apdus = arguments.first.flatMap { Int($0) } ?? 500
let rounds = arguments.dropFirst().first.flatMap { Int($0) } ?? 10

/// The card behind a reader; called on umockdev's ioctl thread.
final class Card: Sendable {
    let card: Mutex<any VirtualCard>
    init(_ card: any VirtualCard) { self.card = Mutex(card) }

    /// Not main-actor code: umockdev calls it on its own thread.
    static let callback: ccid_mock_card_fn = { context, apdu, length, response, capacity in
        guard let context, let apdu, let response else { return 0 }
        let card = Unmanaged<Card>.fromOpaque(context).takeUnretainedValue()
        let answer = card.card.withLock { $0.respond(to: Array(UnsafeBufferPointer(start: apdu, count: length))) }
        let count = min(answer.count, capacity)
        answer.withUnsafeBufferPointer { if let base = $0.baseAddress { response.update(from: base, count: count) } }
        return count
    }
}

let cards = try (0..<2).map { _ in Card(try CardProfiles.load(contentsOf: "Config/cards/pay-visa-qvsdc.json")) }
let mock = ccid_mock_new()
for (index, card) in cards.enumerated() {
    guard ccid_mock_add_reader(mock, Int32(index + 1), Card.callback, Unmanaged.passUnretained(card).toOpaque(), 1) == 0
    else { throw Failure(description: "ccid_mock_add_reader failed") }
}

let selectPPSE: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x0E] + Array("2PAY.SYS.DDF01".utf8) + [0x00]
let command = try CommandAPDU(bytes: selectPPSE)

// The transport first (it claims both readers and looks at each once; the next look is after the benchmark).
let transport = CCIDTransport(
    id: "ccid",
    configuration: CCIDConfiguration(pollPeriod: .seconds(600))
)
let reader = transport.readerID(forReaderNamed: "1209:cc1d 1-2 slot 0")

try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await transport.run() }
    let channel = try await {
        let clock = ContinuousClock()
        let end = clock.now + .seconds(10)
        while true {
            do {
                return try await transport.openChannel(to: reader)
            } catch let error as ProximaError where error.code == .readerVanished && clock.now < end {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }()

    // The minimal libusb client, on reader 1.
    var context: OpaquePointer? = nil
    guard libusb_init(&context) == 0, let context else { throw Failure(description: "libusb_init failed") }
    var list: UnsafeMutablePointer<OpaquePointer?>? = nil
    let count = libusb_get_device_list(context, &list)
    var handle: OpaquePointer? = nil
    for index in 0..<max(0, count) {
        guard let device = list?[index], libusb_get_device_address(device) == 1 else { continue }
        guard libusb_open(device, &handle) == 0 else { throw Failure(description: "libusb_open failed") }
    }
    libusb_free_device_list(list, 1)
    guard let handle else { throw Failure(description: "no reader 1") }
    let sequence = Mutex<UInt8>(0)

    func rawBatch() throws -> Duration {
        var receive = [UInt8](repeating: 0, count: 271)
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<apdus {
            let seq = sequence.withLock { value -> UInt8 in
                defer { value &+= 1 }
                return value
            }
            var message = CCID.xfrBlock(slot: 0, sequence: seq, data: selectPPSE)
            var transferred: Int32 = 0
            var status = message.withUnsafeMutableBufferPointer {
                libusb_bulk_transfer(handle, 0x01, $0.baseAddress, Int32($0.count), &transferred, 2000)
            }
            guard status == 0 else { throw Failure(description: "bulk OUT \(status)") }
            status = receive.withUnsafeMutableBufferPointer {
                libusb_bulk_transfer(handle, 0x82, $0.baseAddress, Int32($0.count), &transferred, 2000)
            }
            guard status == 0, transferred >= 12, receive[6] == seq, receive[Int(transferred) - 2] == 0x90 else {
                throw Failure(description: "bulk IN \(status), \(transferred) bytes")
            }
        }
        return clock.now - start
    }

    func transportBatch() async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<apdus {
            let response = try await channel.transmit(command)
            guard response.status == .success else { throw Failure(description: "transport APDU: \(response)") }
        }
        return clock.now - start
    }

    _ = try rawBatch()
    _ = try await transportBatch()
    var raw = Duration.zero
    var ours = Duration.zero
    for round in 0..<rounds {
        if round.isMultiple(of: 2) {
            raw += try rawBatch()
            ours += try await transportBatch()
        } else {
            ours += try await transportBatch()
            raw += try rawBatch()
        }
    }
    await channel.close()
    libusb_close(handle)
    libusb_exit(context)
    group.cancelAll()

    func microseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(apdus * rounds)
    }
    let rawPer = microseconds(raw)
    let oursPer = microseconds(ours)
    print(
        "CCID transport vs a bare libusb bulk write/read pair, umockdev CCID reader, \(rounds) × \(apdus) SELECT PPSE each"
    )
    print(String(format: "  raw libusb         %8.1f µs per APDU", rawPer))
    print(String(format: "  CCID transport     %8.1f µs per APDU", oursPer))
    print(
        String(
            format: "  ratio %.3f (goal ≤ 1.10), %+.1f µs added per APDU (goal ≤ 50)",
            oursPer / rawPer,
            oursPer - rawPer
        )
    )
}
ccid_mock_free(mock)
