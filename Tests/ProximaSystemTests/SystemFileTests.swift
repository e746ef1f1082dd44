import Foundation
import ProximaSystem
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder under the system's temporary directory, removed after `body`.
private func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = "\(NSTemporaryDirectory())/proxima-system-\(UInt64.random(in: 0...UInt64.max))"
    try SystemFile.createDirectory(path)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

@Suite struct SystemFileTests {
    @Test func atomicWriteCreatesAPrivateFileWhateverTheUmask() throws {
        try withTemporaryDirectory { directory in
            let path = "\(directory)/secret.pem"
            let previous = umask(0)
            defer { umask(previous) }
            try SystemFile.writeAtomically(Array("key".utf8), to: path)
            let status = try FileStatus.of(path)
            #expect(status.mode & 0o777 == 0o600)
            #expect(status.isRegularFile)
            #expect(try SystemFile.read(path, limit: 16) == Array("key".utf8))
            // Only the file itself: the temporary file was renamed, not left behind.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["secret.pem"])
        }
    }

    @Test func atomicWriteReplacesOrRefusesAsAsked() throws {
        try withTemporaryDirectory { directory in
            let path = "\(directory)/link.json"
            try SystemFile.writeAtomically(Array("one".utf8), to: path)
            try SystemFile.writeAtomically(Array("two".utf8), to: path)
            #expect(try SystemFile.read(path, limit: 16) == Array("two".utf8))
            #expect {
                try SystemFile.writeAtomically(Array("three".utf8), to: path, replacing: false)
            } throws: { error in
                (error as? SystemFile.Failure)?.errno == .fileExists
            }
            #expect(try SystemFile.read(path, limit: 16) == Array("two".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["link.json"])
        }
    }

    @Test func boundedReadRefusesDevicesLargeFilesAndMissingOnes() throws {
        try withTemporaryDirectory { directory in
            let large = "\(directory)/large"
            try SystemFile.writeAtomically([UInt8](repeating: 0x41, count: 100), to: large)
            #expect(throws: SystemFile.Failure.self) { try SystemFile.read(large, limit: 99) }
            #expect(try SystemFile.read(large, limit: 100).count == 100)
            #expect {
                try SystemFile.read("/dev/zero", limit: 10)
            } throws: { error in
                (error as? SystemFile.Failure)?.reason == "not a regular file"
            }
            #expect {
                try SystemFile.read("\(directory)/absent", limit: 10)
            } throws: { error in
                let failure = error as? SystemFile.Failure
                return failure?.errno == .noSuchFile && failure?.description.contains("\(directory)/absent") == true
            }
        }
    }

    @Test func createDirectoryMakesParentsAndKeepsExistingOnes() throws {
        try withTemporaryDirectory { directory in
            let nested = "\(directory)/a/b/c"
            try SystemFile.createDirectory(nested, permissions: 0o700)
            #expect(try FileStatus.of(nested).isDirectory)
            try SystemFile.createDirectory(nested)
            try SystemFile.remove("\(nested)/absent")  // a missing file is not an error
        }
    }

    @Test func descriptorsRoundTripBytesOverAPipe() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let reader = FileDescriptor(rawValue: ends[0])
        let writer = FileDescriptor(rawValue: ends[1])
        let bytes = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        try writer.writeAll(bytes)
        try writer.close()
        #expect(try reader.read(exactly: 6000) == bytes)
        try reader.close()
    }

    @Test func errnoNamesTheSystemError() {
        #expect(Errno.noSuchFile.description == "No such file or directory (errno 2)")
        #expect(Errno(rawValue: EINTR) == .interrupted)
    }

    @Test func refusedConnectionNamesHostPortAndReason() throws {
        // Port 1 on loopback: nothing listens there on these machines.
        #expect {
            _ = try FileDescriptor.connectTCP(host: "127.0.0.1", port: 1)
        } throws: { error in
            guard let failure = error as? FileDescriptor.ConnectFailure else { return false }
            return failure.errno == Errno(rawValue: ECONNREFUSED)
                && failure.description.hasPrefix("cannot connect to 127.0.0.1:1")
        }
    }
}
