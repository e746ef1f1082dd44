import Foundation
import ProximaSystem
import Testing

/// The kernel's boot id, read as store and forward reads it (`/proc/sys/kernel/random/boot_id`).
@Suite struct BootIdentifierTests {
    @Test func theBootIDIsTheKernelsUUID() throws {
        let id = try BootIdentifier.current()
        #expect(id.count == 36)
        #expect(id == id.lowercased())
        let file = try String(contentsOfFile: BootIdentifier.path, encoding: .utf8)
        #expect(file.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() == id)
        // The same for every read until the machine restarts.
        #expect(try BootIdentifier.current() == id)
    }

    @Test func aFileWithoutAUUIDIsRefusedNamingIt() throws {
        let path = NSTemporaryDirectory() + "proxima-boot-id-\(UUID().uuidString)"
        try Data("not a boot id\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            try BootIdentifier.current(path: path)
        } throws: { error in
            "\(error)".contains(path) && "\(error)".contains("UUID")
        }
        #expect(throws: SystemFile.Failure.self) { try BootIdentifier.current(path: path + "-missing") }
    }
}
