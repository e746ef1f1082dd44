internal import ProximaCore
internal import ProximaSystem

/// A JSON file that a manifest key names (`caPublicKeys`, `education`): read once, parsed and checked, every failure
/// an `invalidManifest` error naming the file, the key's JSON path and, for its content, the path inside the file.
enum SettingsFile {
    /// Reads the file at `path` (at most `limit` bytes) and builds a value from its JSON with `make`.
    /// - Parameter jsonPath: the manifest path that named the file, for errors.
    static func load<Value>(
        _ path: String,
        limit: Int,
        jsonPath: String?,
        _ make: (JSONValue) throws -> Value
    ) throws -> Value {
        let bytes: [UInt8]
        do {
            bytes = try SystemFile.read(path, limit: limit)
        } catch {
            throw ProximaError(.invalidManifest, "cannot read \(path): \(error.reason)", jsonPath: jsonPath)
        }
        do {
            return try make(try JSONValue.parse(bytes))
        } catch let error as ProximaError {
            throw ProximaError(
                .invalidManifest,
                "\(path): \(error.pathAndReason)",
                jsonPath: jsonPath,
                underlying: error
            )
        }
    }
}
