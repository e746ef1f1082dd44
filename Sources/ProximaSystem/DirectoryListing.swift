#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SystemFile {
    /// The names in the folder at `path` (not `.` and `..`), sorted, at most `limit` of them so that a huge folder
    /// cannot stall whoever reads configuration.
    /// - Throws: ``Failure`` (`list`) when the folder cannot be opened or holds more than `limit` entries.
    public static func directoryEntries(_ path: String, limit: Int = 4096) throws(Failure) -> [String] {
        guard let directory = opendir(path) else { throw Failure("list", path, errno: .current) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != ".." else { continue }
            guard names.count < limit else { throw Failure("list", path, problem: "more than \(limit) entries") }
            names.append(name)
        }
        return names.sorted()
    }
}
