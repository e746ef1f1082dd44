import Foundation
import ProximaCore
import ProximaTestSupport
import Testing

/// The known-answer vector files of this target's `Vectors/` resource folder (sources and licences in its
/// README.md).
enum Vectors {
    /// The JSON file `name` from `Vectors/`.
    static func json(_ name: String) throws -> JSONValue {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Vectors"),
            "no Vectors/\(name) in the test bundle"
        )
        return try JSONValue.parse(Array(try Data(contentsOf: url)))
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
