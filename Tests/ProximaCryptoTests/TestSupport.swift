import Foundation
import ProximaCore
import Testing

/// Bytes from hex written in a test (spaces allowed); records an issue for a typo instead of trapping.
func bytes(_ hex: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    guard let value = [UInt8](hex: hex) else {
        Issue.record("test vector \"\(hex)\" is not valid hex", sourceLocation: sourceLocation)
        return []
    }
    return value
}

/// Lower-case hex, as Python prints it.
func hex(_ bytes: [UInt8]) -> String { bytes.hexString.lowercased() }

/// Files the tests read by path: the package root is the directory holding `Package.swift` above this file.
enum TestFiles {
    static let packageRoot: URL? = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                return directory
            }
            directory.deleteLastPathComponent()
        }
        return nil
    }()

    /// A file below the package root, such as `Config/keys/psp-test-public.pem`.
    static func contents(ofPackageFile path: String) throws -> [UInt8] {
        let root = try #require(packageRoot, "no Package.swift above \(#filePath)")
        let url = root.appendingPathComponent(path)
        let data = try #require(FileManager.default.contents(atPath: url.path), "cannot read \(url.path)")
        return Array(data)
    }

    /// A shared vector file from `<package root>/../shared/vectors/`.
    static func vectors(_ name: String) throws -> JSONValue {
        try JSONValue.parse(try contents(ofPackageFile: "../shared/vectors/\(name)"))
    }
}

/// The Python 3 that cross-checks our output against independent implementations (`cryptography`, `pyhpke`,
/// `pyjwt`), run as a child process.
enum Python {
    /// The `python3` on `PATH`, if any; tests that need it are disabled without it.
    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/python3"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    static var isAvailable: Bool { executable != nil }

    struct Failure: Error, CustomStringConvertible {
        let status: Int32
        let standardError: String
        var description: String {
            let hint =
                standardError.contains("ModuleNotFoundError")
                ? " (install the Python peers: python3 -m pip install cryptography pyhpke 'pyjwt[crypto]')" : ""
            return "python3 exited with \(status)\(hint): \(standardError)"
        }
    }

    /// Runs `script` with `arguments` and returns its standard output without the trailing newline.
    static func run(_ script: String, arguments: [String] = []) throws -> String {
        let executable = try #require(executable, "python3 is not on PATH")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-c", script] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(status: process.terminationStatus, standardError: String(decoding: errorData, as: UTF8.self))
        }
        var text = String(decoding: outputData, as: UTF8.self)
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// Runs `script`, which prints one JSON object, and returns it parsed.
    static func runJSON(_ script: String, arguments: [String] = []) throws -> JSONValue {
        try JSONValue.parse(try run(script, arguments: arguments))
    }
}

extension JSONValue {
    /// The string member `key`, or a recorded issue and "".
    func string(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        guard case .string(let value)? = self[key] else {
            Issue.record("JSON member \"\(key)\" is not a string", sourceLocation: sourceLocation)
            return ""
        }
        return value
    }

    /// The hex string member `key` as bytes.
    func hexBytes(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
        bytes(string(key, sourceLocation: sourceLocation), sourceLocation: sourceLocation)
    }

    /// The integer member `key`, or a recorded issue and 0.
    func integer(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int64 {
        guard case .integer(let value)? = self[key] else {
            Issue.record("JSON member \"\(key)\" is not an integer", sourceLocation: sourceLocation)
            return 0
        }
        return value
    }

    /// The array member `key`, or a recorded issue and [].
    func array(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) -> [JSONValue] {
        guard case .array(let value)? = self[key] else {
            Issue.record("JSON member \"\(key)\" is not an array", sourceLocation: sourceLocation)
            return []
        }
        return value
    }
}
