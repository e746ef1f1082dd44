#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open file descriptor, as swift-system's `FileDescriptor`: a typed wrapper whose calls retry `EINTR` and
/// throw ``Errno``. It does not close itself; the owner calls ``close()`` (or uses ``closeAfter(_:)``).
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// How ``open(_:_:permissions:)`` opens a file.
    public struct Options: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readOnly = Options([])
        public static let writeOnly = Options(rawValue: O_WRONLY)
        public static let readWrite = Options(rawValue: O_RDWR)
        public static let create = Options(rawValue: O_CREAT)
        /// With ``create``: fail with `EEXIST` when the file exists.
        public static let exclusive = Options(rawValue: O_EXCL)
        public static let truncate = Options(rawValue: O_TRUNC)
        public static let append = Options(rawValue: O_APPEND)
        public static let directory = Options(rawValue: O_DIRECTORY)
        public static let noFollow = Options(rawValue: O_NOFOLLOW)
        public static let nonBlocking = Options(rawValue: O_NONBLOCK)
    }

    /// Opens `path`; the descriptor is always close-on-exec, so no child process inherits it.
    /// - Parameter permissions: The mode of a file ``Options/create`` makes (the umask applies on top).
    public static func open(_ path: String, _ options: Options, permissions: mode_t = 0o600) throws(Errno)
        -> FileDescriptor
    {
        let flags = options.rawValue | O_CLOEXEC
        return FileDescriptor(rawValue: try retryingOnInterrupt { systemOpen(path, flags, permissions) })
    }

    /// Reads at most `count` bytes; an empty result is the end of the file (or a closed peer).
    public func read(upTo count: Int) throws(Errno) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(Errno) in try retryingOnInterrupt { systemRead(rawValue, raw.baseAddress, raw.count) } }
        }
        buffer.removeSubrange(try got.get()...)
        return buffer
    }

    /// Reads into `buffer`, returning how many bytes arrived (0 at the end of the file).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingOnInterrupt { systemRead(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads exactly `count` bytes, or fewer only when the end of the file comes first.
    public func read(exactly count: Int) throws(Errno) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            let chunk = try read(upTo: count - result.count)
            if chunk.isEmpty { break }
            result += chunk
        }
        return result
    }

    /// Writes every byte of `bytes`, looping over short writes.
    public func writeAll<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(Errno) {
        let array = Array(bytes)
        var offset = 0
        while offset < array.count {
            let written = array.withUnsafeBytes { raw in
                Result { () throws(Errno) in
                    try retryingOnInterrupt {
                        systemWrite(rawValue, raw.baseAddress.map { $0 + offset }, raw.count - offset)
                    }
                }
            }
            offset += try written.get()
        }
    }

    /// Flushes the file's data and metadata to the device (`fsync(2)`).
    public func sync() throws(Errno) {
        _ = try retryingOnInterrupt { fsync(rawValue) }
    }

    /// The file's identity, size and modification time (`fstat(2)`).
    public func status() throws(Errno) -> FileStatus {
        var info = stat()
        _ = try retryingOnInterrupt { fstat(rawValue, &info) }
        return FileStatus(info)
    }

    /// Closes the descriptor. `EINTR` is not retried: on Linux the descriptor is gone either way.
    public func close() throws(Errno) {
        if systemClose(rawValue) == -1 {
            let error = Errno.current
            if error != .interrupted { throw error }
        }
    }

    /// Runs `body` with the descriptor and closes it afterwards, also when `body` throws.
    public func closeAfter<T, E: Error>(_ body: (FileDescriptor) throws(E) -> T) throws(E) -> T {
        defer { try? close() }
        return try body(self)
    }
}

/// What `stat(2)` says of a file: enough to tell one version of it from the next.
public struct FileStatus: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    /// Modification time, nanoseconds since 1970.
    public var modified: Int64
    /// Permission bits and file type (`st_mode`).
    public var mode: UInt32
    public var isRegularFile: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
    public var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
    /// Whether the group or others may write the file.
    public var isGroupOrWorldWritable: Bool { mode & 0o022 != 0 }

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        mode = UInt32(info.st_mode)
    }

    /// The status of `path` (following symbolic links).
    public static func of(_ path: String) throws(Errno) -> FileStatus {
        var info = stat()
        _ = try retryingOnInterrupt { stat(path, &info) }
        return FileStatus(info)
    }
}

// The C calls under names of their own: inside `FileDescriptor` the type's methods hide the global functions.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
