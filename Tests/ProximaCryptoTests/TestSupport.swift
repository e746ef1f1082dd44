import Foundation
import ProximaCore
import ProximaTestSupport
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
