#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CLI's system calls on files: checks before reading a file, and writing a new file whose permissions hold
/// from the moment it exists.
///
/// This is the only file of the `proxima` tool that calls `open`, `write`, `fsync`, `link` or `rename`. It moves
/// onto the shared system-call layer (`ProximaSystem`: a typed file descriptor, `Errno`, EINTR retry, atomic 0600
/// writes) that the kernel side is getting; the callers keep the same three functions.
enum SecureFile {
    /// A system call on `path` failed with `errno`.
    struct Failure: Error {
        var path: String
        /// The call that failed (`open`, `link`, …), for the rare errno whose meaning depends on it.
        var call: String
        var errno: Int32
    }

    /// What a path names.
    enum Kind {
        case regularFile, directory, other
    }

    /// What `path` names, following symbolic links.
    /// - Throws: ``Failure`` from `stat` (`ENOENT` when nothing is there).
    static func kind(of path: String) throws(Failure) -> Kind {
        var status = stat()
        guard stat(path, &status) == 0 else { throw Failure(path: path, call: "stat", errno: errno) }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return .regularFile
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// Whether anything (a file, a folder, a dangling symbolic link) is at `path`.
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// At most `limit` bytes from the start of the regular file at `path`.
    /// - Throws: ``Failure`` from `open` or `read`; `EISDIR` for a folder, `EINVAL` for anything but a regular file.
    static func readPrefix(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let fd = try retrying(path, "open") { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw Failure(path: path, call: "fstat", errno: errno) }
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw Failure(path: path, call: "open", errno: EISDIR)
        default: throw Failure(path: path, call: "open", errno: EINVAL)
        }
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, limit - count) }
            if n < 0 {
                guard errno == EINTR else { throw Failure(path: path, call: "read", errno: errno) }
                continue
            }
            if n == 0 { break }
            count += n
        }
        return Array(bytes[..<count])
    }

    /// Writes `contents` as the file `path` with permissions `mode` from its creation on.
    ///
    /// The bytes go to a new temporary file in the same folder, created with `O_CREAT | O_EXCL` and `mode` (so it
    /// is never readable by anyone else, whatever the umask, and never follows a planted symbolic link), then
    /// `fsync`ed and moved into place in one step: hard-linked when `replacing` is false (which fails if `path`
    /// exists, with no window in which a check could go stale), renamed over the old file when it is true. The
    /// folder is synced so the new name survives a crash. On failure the temporary file is removed.
    /// - Throws: ``Failure``; `EEXIST` from `link` when `path` exists and `replacing` is false.
    static func create(_ path: String, contents: [UInt8], mode: mode_t, replacing: Bool) throws(Failure) {
        let folder = folder(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let temporary = "\(folder)/.\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = try retrying(path, "open") {
            open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        }
        var placed = false
        defer { if !placed { unlink(temporary) } }
        do {
            defer { close(fd) }
            // The umask can only clear bits of `mode`; set it exactly, before any byte is written.
            guard fchmod(fd, mode) == 0 else { throw Failure(path: path, call: "fchmod", errno: errno) }
            var written = 0
            while written < contents.count {
                let n = contents.withUnsafeBytes { write(fd, $0.baseAddress! + written, contents.count - written) }
                if n < 0 {
                    guard errno == EINTR else { throw Failure(path: path, call: "write", errno: errno) }
                    continue
                }
                written += n
            }
            _ = try retrying(path, "fsync") { fsync(fd) }
        }
        if replacing {
            guard rename(temporary, path) == 0 else { throw Failure(path: path, call: "rename", errno: errno) }
        } else {
            if link(temporary, path) != 0 {
                let linkError = errno
                // A file system without hard links (FAT, some FUSE mounts): check, then rename. The window
                // between the two only risks replacing a key created in it; the new file is 0600 either way.
                guard [EPERM, EOPNOTSUPP, EMLINK].contains(linkError), !exists(path) else {
                    throw Failure(path: path, call: "link", errno: linkError)
                }
                guard rename(temporary, path) == 0 else { throw Failure(path: path, call: "rename", errno: errno) }
            } else {
                unlink(temporary)
            }
        }
        placed = true
        let folderFD = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFD >= 0 {
            _ = fsync(folderFD)
            close(folderFD)
        }
    }

    /// Removes the file at `path`, ignoring failure (used to undo a half-finished key pair).
    static func remove(_ path: String) { unlink(path) }

    /// The folder holding `path` (`.` for a bare name).
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The message of an errno, as the C library words it.
    static func message(_ errno: Int32) -> String { String(cString: strerror(errno)) }

    /// Calls `body` until it does not fail with `EINTR`; a negative result throws with `errno`.
    private static func retrying<T: BinaryInteger>(
        _ path: String,
        _ call: String,
        _ body: () -> T
    ) throws(Failure) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            guard errno == EINTR else { throw Failure(path: path, call: call, errno: errno) }
        }
    }
}
