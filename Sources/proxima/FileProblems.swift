import ProximaSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file the user named (or a default one) cannot be used: printed as one line naming the path, the problem and
/// what to do, never as a raw system or Foundation error.
struct FileProblem: Error, CustomStringConvertible {
    var path: String
    var problem: String
    var remedy: String
    /// 1 for most files; 3 for the manifest (the documented "the manifest is invalid or cannot be read" code).
    var exitCode: ExitCode = .failure

    var description: String { "\(path): \(problem); \(remedy)" }

    init(path: String, problem: String, remedy: String, exitCode: ExitCode = .failure) {
        self.path = path
        self.problem = problem
        self.remedy = remedy
        self.exitCode = exitCode
    }

    /// A failed system call on `path`, in words a user acts on.
    init(path: String, _ error: Errno, remedy: String, exitCode: ExitCode = .failure) {
        self.init(path: path, problem: Self.words(for: error), remedy: remedy, exitCode: exitCode)
    }

    /// A failed ``SystemFile`` operation on `path` (which names the file the user gave, not a temporary one).
    init(path: String, _ failure: SystemFile.Failure, remedy: String, exitCode: ExitCode = .failure) {
        let problem = failure.errno.map(Self.words(for:)) ?? failure.problem ?? "cannot be used"
        self.init(path: path, problem: problem, remedy: remedy, exitCode: exitCode)
    }

    static func words(for error: Errno) -> String {
        switch error.rawValue {
        case ENOENT: "no such file or folder"
        case EACCES, EPERM: "permission denied"
        case EISDIR: "it is a folder, not a file"
        case ENOTDIR: "a part of the path is not a folder"
        case EEXIST: "already exists"
        case EROFS: "the file system is read-only"
        case ENOSPC, EDQUOT: "no space left on the device"
        case ELOOP: "too many levels of symbolic links"
        case ENAMETOOLONG: "the name is too long"
        default: String(cString: strerror(error.rawValue))
        }
    }
}

/// The checks the commands make before handing a path to a library, so that a user meets a ``FileProblem``
/// instead of a library's error. The system calls are ``ProximaSystem``'s.
enum FileChecks {
    /// Largest key file read to check it (the key loader's own limit).
    static let keyBytes = 64 * 1024

    /// The regular file at `path` exists and can be opened for reading.
    static func readable(_ path: String, remedy: String, exitCode: ExitCode = .failure) throws(FileProblem) {
        let status: FileStatus
        do {
            status = try FileStatus.of(path)
            if status.isRegularFile { try FileDescriptor.open(path, [.readOnly, .nonBlocking]).close() }
        } catch {
            throw FileProblem(path: path, error, remedy: remedy, exitCode: exitCode)
        }
        if status.isDirectory {
            throw FileProblem(path: path, problem: "it is a folder, not a file", remedy: remedy, exitCode: exitCode)
        }
        if !status.isRegularFile {
            throw FileProblem(path: path, problem: "not a regular file", remedy: remedy, exitCode: exitCode)
        }
    }

    /// The manifest at `path` exists and can be read.
    /// - Throws: ``FileProblem`` with exit code 3.
    static func manifest(
        _ path: String,
        remedy: String = "name a readable manifest with --config FILE or $PROXIMA_CONFIG"
    ) throws(FileProblem) {
        try readable(path, remedy: remedy, exitCode: .invalidConfig)
    }

    /// The file at `path` can be read and holds a PEM private key.
    static func privateKey(_ path: String) throws(FileProblem) {
        let remedy = "give a PEM private key with --key FILE (make one with 'proxima psp keygen')"
        try readable(path, remedy: remedy)
        let bytes: [UInt8]
        do {
            bytes = try SystemFile.read(path, limit: keyBytes)
        } catch {
            throw FileProblem(path: path, error, remedy: remedy)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN "), text.contains("PRIVATE KEY-----") else {
            throw FileProblem(
                path: path,
                problem: "not a PEM private key (no -----BEGIN … PRIVATE KEY-----)",
                remedy: remedy
            )
        }
    }

    /// The card profile at `path` exists and can be read.
    static func cardProfile(_ path: String) throws(FileProblem) {
        try readable(path, remedy: "give a card profile with --card FILE, e.g. Config/cards/pay-visa-qvsdc.json")
    }

    /// `path` is an existing folder.
    static func outputFolder(_ path: String) throws(FileProblem) {
        let status: FileStatus
        do {
            status = try FileStatus.of(path)
        } catch {
            if error == .noSuchFile {
                throw FileProblem(
                    path: path,
                    problem: "no such folder",
                    remedy: "create it (mkdir -p \(path)) or give an existing folder with --out DIR"
                )
            }
            throw FileProblem(path: path, error, remedy: "give a folder you can write to with --out DIR")
        }
        guard status.isDirectory else {
            throw FileProblem(path: path, problem: "not a folder", remedy: "give a folder with --out DIR")
        }
    }
}
