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
    /// 1 for most files; 3 for the manifest (the documented "the manifest is invalid" code).
    var exitCode: ExitCode = .failure

    var description: String { "\(path): \(problem); \(remedy)" }

    /// The problem of a failed system call, in words a user acts on.
    init(_ failure: SecureFile.Failure, remedy: String, exitCode: ExitCode = .failure) {
        self.path = failure.path
        self.problem = Self.words(for: failure)
        self.remedy = remedy
        self.exitCode = exitCode
    }

    init(path: String, problem: String, remedy: String, exitCode: ExitCode = .failure) {
        self.path = path
        self.problem = problem
        self.remedy = remedy
        self.exitCode = exitCode
    }

    private static func words(for failure: SecureFile.Failure) -> String {
        switch failure.errno {
        case ENOENT: "no such file or folder"
        case EACCES, EPERM: "permission denied"
        case EISDIR: "it is a folder, not a file"
        case EINVAL where failure.call == "open": "not a regular file"
        case ENOTDIR: "a part of the path is not a folder"
        case EEXIST: "already exists"
        case EROFS: "the file system is read-only"
        case ENOSPC, EDQUOT: "no space left on the device"
        case ELOOP: "too many levels of symbolic links"
        case ENAMETOOLONG: "the name is too long"
        default: SecureFile.message(failure.errno)
        }
    }
}

/// The checks the commands make before handing a path to a library, so a user meets a ``FileProblem``.
enum FileChecks {
    /// Largest file read to check it (keys and manifests are far smaller; this only bounds the check).
    static let checkedBytes = 64 * 1024

    /// The manifest at `path` exists and can be read.
    /// - Throws: ``FileProblem`` with exit code 3.
    static func manifest(
        _ path: String,
        remedy: String = "name a readable manifest with --config FILE or $PROXIMA_CONFIG"
    ) throws(FileProblem) {
        do {
            _ = try SecureFile.readPrefix(path, limit: 1)
        } catch {
            throw FileProblem(error, remedy: remedy, exitCode: .invalidConfig)
        }
    }

    /// The file at `path` can be read and holds a PEM private key.
    static func privateKey(_ path: String) throws(FileProblem) {
        let remedy = "give a PEM private key with --key FILE (make one with 'proxima psp keygen')"
        let bytes: [UInt8]
        do {
            bytes = try SecureFile.readPrefix(path, limit: checkedBytes)
        } catch {
            throw FileProblem(error, remedy: remedy)
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
        do {
            _ = try SecureFile.readPrefix(path, limit: 1)
        } catch {
            throw FileProblem(
                error,
                remedy: "give a card profile with --card FILE, e.g. Config/cards/pay-visa-qvsdc.json"
            )
        }
    }

    /// `path` is an existing folder new files can be written to.
    static func outputFolder(_ path: String) throws(FileProblem) {
        let kind: SecureFile.Kind
        do {
            kind = try SecureFile.kind(of: path)
        } catch {
            if error.errno == ENOENT {
                throw FileProblem(
                    path: path,
                    problem: "no such folder",
                    remedy: "create it (mkdir -p \(path)) or give an existing folder with --out DIR"
                )
            }
            throw FileProblem(error, remedy: "give a folder you can write to with --out DIR")
        }
        guard kind == .directory else {
            throw FileProblem(path: path, problem: "not a folder", remedy: "give a folder with --out DIR")
        }
    }
}
