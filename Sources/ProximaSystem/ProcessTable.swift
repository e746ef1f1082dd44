#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The processes of this machine, as `/proc` shows them (Linux): enough to say who holds a device.
public enum ProcessTable {
    /// A process holding a file open.
    public struct Holder: Hashable, Sendable, CustomStringConvertible {
        public var pid: Int32
        /// `/proc/<pid>/comm`: the executable's name, at most 15 characters.
        public var name: String
        public var description: String { "\(name) (pid \(pid))" }

        public init(pid: Int32, name: String) {
            self.pid = pid
            self.name = name
        }
    }

    /// The processes other than this one with a descriptor open on `path` (a device node such as
    /// `/dev/bus/usb/001/004`), found by reading every `/proc/<pid>/fd`.
    ///
    /// A descriptor matches when it is the same file (`stat` through the `/proc` link gives the same device and
    /// inode as `stat` of `path`: also right for a process that sees the node under another name, in a chroot or
    /// umockdev's test bed), or when its link names `path` exactly. Processes whose descriptors this one may not read
    /// (another user's, without privileges) are skipped, so the answer can be incomplete, never wrong. At most
    /// `limit` processes are looked at.
    public static func holders(of path: String, limit: Int = 32_768) -> [Holder] {
        let target = try? FileStatus.of(path)
        let ownPID = getpid()
        var holders: [Holder] = []
        for pid in numericEntries(of: "/proc").prefix(limit) where pid != ownPID {
            let fdDirectory = "/proc/\(pid)/fd"
            for fd in numericEntries(of: fdDirectory) {
                let link = fdDirectory + "/\(fd)"
                let sameFile =
                    target.map { target in
                        (try? FileStatus.of(link)).map { $0.device == target.device && $0.inode == target.inode }
                            ?? false
                    } ?? false
                guard sameFile || linkTarget(link) == path else { continue }
                holders.append(Holder(pid: pid, name: processName(pid)))
                break
            }
        }
        return holders
    }

    /// The names in `directory` that are decimal numbers (pids, descriptors), in no particular order.
    static func numericEntries(of directory: String) -> [Int32] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var numbers: [Int32] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if let number = Int32(name), number >= 0 { numbers.append(number) }
        }
        return numbers
    }

    static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return -1 }
            return readlink(path, base, bytes.count - 1)
        }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func processName(_ pid: Int32) -> String {
        guard let bytes = try? SystemFile.read("/proc/\(pid)/comm", limit: 64) else { return "?" }
        let name = String(decoding: bytes, as: UTF8.self)
        return name.hasSuffix("\n") ? String(name.dropLast()) : name
    }
}
