import Foundation
import ProximaCore

/// The Python 3 that cross-checks our output against independent implementations (`cryptography`, `pyhpke`,
/// `pyjwt`), run as a child process.
public enum Python {
    /// The `python3` on `PATH`, if any; tests that need it are disabled without it.
    public static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/python3"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    public static var isAvailable: Bool { executable != nil }

    public struct Failure: Error, CustomStringConvertible {
        public let status: Int32
        public let standardError: String
        public var description: String {
            let hint =
                standardError.contains("ModuleNotFoundError")
                ? " (install the Python peers: python3 -m pip install cryptography pyhpke 'pyjwt[crypto]')" : ""
            return "python3 exited with \(status)\(hint): \(standardError)"
        }
    }

    /// Runs `script` with `arguments` and returns its standard output without the trailing newline.
    public static func run(_ script: String, arguments: [String] = []) throws -> String {
        guard let executable else { throw Failure(status: -1, standardError: "python3 is not on PATH") }
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
    public static func runJSON(_ script: String, arguments: [String] = []) throws -> JSONValue {
        try JSONValue.parse(try run(script, arguments: arguments))
    }
}
