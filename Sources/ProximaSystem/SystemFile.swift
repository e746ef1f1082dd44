#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File operations built on ``FileDescriptor`` that Proxima needs in several places: bounded reads of
/// configuration files, and atomic, durable writes of small private files (account link, keys, store metadata).
public enum SystemFile {
    /// A failed file operation: what was done, to which path, and the system's reason.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// `create`, `write`, `rename`, `read`, …
        public var operation: String
        public var path: String
        /// The system error, when the failure came from one.
        public var errno: Errno?
        /// The reason when it is not a system error ("not a regular file", "more than the 65536-byte limit").
        public var problem: String?

        public init(_ operation: String, _ path: String, errno: Errno? = nil, problem: String? = nil) {
            self.operation = operation
            self.path = path
            self.errno = errno
            self.problem = problem
        }

        /// The reason alone, for messages that name the path themselves.
        public var reason: String {
            if let problem { return problem }
            switch errno {
            case .noSuchFile?: return "no such file"
            case .permissionDenied?: return "permission denied"
            case let error?: return "\(error)"
            case nil: return "failed"
            }
        }

        public var description: String { "cannot \(operation) \(path): \(reason)" }
    }

    /// The bytes of the regular file at `path`, at most `limit` of them, so that a path such as `/dev/zero` or a
    /// huge file cannot stall whoever reads configuration.
    public static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let descriptor: FileDescriptor
        do throws(Errno) {
            descriptor = try FileDescriptor.open(path, [.readOnly, .nonBlocking])
        } catch {
            throw Failure("read", path, errno: error)
        }
        return try descriptor.closeAfter { (file) throws(Failure) -> [UInt8] in
            let status: FileStatus
            let bytes: [UInt8]
            do throws(Errno) {
                status = try file.status()
            } catch {
                throw Failure("read", path, errno: error)
            }
            guard status.isRegularFile else { throw Failure("read", path, problem: "not a regular file") }
            guard status.size <= limit else {
                throw Failure("read", path, problem: "\(status.size) bytes, more than the \(limit)-byte limit")
            }
            do throws(Errno) {
                bytes = try file.read(exactly: limit + 1)
            } catch {
                throw Failure("read", path, errno: error)
            }
            guard bytes.count <= limit else {
                throw Failure("read", path, problem: "more than the \(limit)-byte limit")
            }
            return bytes
        }
    }

    /// Replaces the file at `path` with `bytes` atomically and durably: a new file in the same directory, created
    /// with `permissions` from the start (never readable by others, even for a moment), written and flushed, then
    /// renamed over `path`, and the directory flushed so the rename survives a crash. A reader sees the old file
    /// or the new one, never part of either.
    ///
    /// - Parameter replacing: When `false`, fails with `EEXIST` if `path` exists (for keys that must not be
    ///   overwritten by accident).
    public static func writeAtomically<Bytes: Collection<UInt8>>(
        _ bytes: Bytes,
        to path: String,
        permissions: mode_t = 0o600,
        replacing: Bool = true
    ) throws(Failure) {
        let directory = parentDirectory(of: path)
        let temporary = "\(directory)/.\(baseName(of: path)).\(UInt64.random(in: 0...UInt64.max)).tmp"
        let file: FileDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(temporary, [.writeOnly, .create, .exclusive], permissions: permissions)
        } catch {
            throw Failure("create", temporary, errno: error)
        }
        do throws(Errno) {
            try file.closeAfter { (file) throws(Errno) in
                // The umask may have narrowed the mode; it must never have widened it, and fchmod makes it exact.
                _ = try retryingOnInterrupt { fchmod(file.rawValue, permissions) }
                try file.writeAll(bytes)
                try file.sync()
            }
        } catch {
            unlink(temporary)
            throw Failure("write", temporary, errno: error)
        }
        if !replacing {
            // link(2) fails with EEXIST instead of replacing, which rename(2) would do silently.
            guard link(temporary, path) == 0 else {
                let error = Errno.current
                unlink(temporary)
                throw Failure("create", path, errno: error)
            }
            unlink(temporary)
        } else if rename(temporary, path) != 0 {
            let error = Errno.current
            unlink(temporary)
            throw Failure("rename into", path, errno: error)
        }
        try syncDirectory(directory)
    }

    /// Creates `path` and its missing parents with `permissions` (existing directories are left as they are).
    public static func createDirectory(_ path: String, permissions: mode_t = 0o700) throws(Failure) {
        if (try? FileStatus.of(path))?.isDirectory == true { return }
        let parent = parentDirectory(of: path)
        if parent != path, parent != ".", (try? FileStatus.of(parent)) == nil {
            try createDirectory(parent, permissions: permissions)
        }
        if mkdir(path, permissions) != 0 {
            let error = Errno.current
            if error == .fileExists, (try? FileStatus.of(path))?.isDirectory == true { return }
            throw Failure("create the directory", path, errno: error)
        }
    }

    /// Removes the file at `path`; a missing file is not an error.
    public static func remove(_ path: String) throws(Failure) {
        if unlink(path) != 0 {
            let error = Errno.current
            if error != .noSuchFile { throw Failure("remove", path, errno: error) }
        }
    }

    /// Flushes a directory's entries to disk, so a rename or create inside it is durable.
    public static func syncDirectory(_ directory: String) throws(Failure) {
        do throws(Errno) {
            let descriptor = try FileDescriptor.open(directory, [.readOnly, .directory])
            try descriptor.closeAfter { (file) throws(Errno) in try file.sync() }
        } catch {
            throw Failure("flush the directory", directory, errno: error)
        }
    }

    /// The folder part of `path` (`.` for a bare name).
    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func baseName(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }
}
