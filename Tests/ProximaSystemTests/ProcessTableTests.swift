import Foundation
import ProximaSystem
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ProcessTableTests {
    @Test(
        "a child holding a file open is named with its pid; this process, holding it too, is not; nobody holds a new file"
    )
    func holders() throws {
        let path = "\(NSTemporaryDirectory())/proxima-holder-\(UInt64.random(in: 0...UInt64.max))"
        try SystemFile.writeAtomically(Array("node".utf8), to: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(ProcessTable.holders(of: path).isEmpty)
        let own = try FileDescriptor.open(path, .readOnly)
        defer { try? own.close() }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", "exec 3<\"$0\" && echo ready && exec sleep 600", path]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        defer {
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        #expect(String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("ready"))
        // "ready" is printed by the shell before it execs sleep, so the name can still be "sh" for a moment:
        // wait (bounded) for the exec, the descriptor is held throughout.
        var holders = ProcessTable.holders(of: path)
        for _ in 0..<500 where holders.first?.name != "sleep" {
            usleep(10_000)
            holders = ProcessTable.holders(of: path)
        }
        #expect(holders == [ProcessTable.Holder(pid: child.processIdentifier, name: "sleep")])
        #expect(holders.first?.description == "sleep (pid \(child.processIdentifier))")
    }
}
