import Foundation
import ProximaCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The merchant account linked on a kernel: which merchant, with which processor, when, for which reader
/// identifier. Kept in `<dataDirectory>/account-link.json`.
///
/// The file (UTF-8 JSON, mode 0600):
///
/// ```json
/// {"version":1,"merchantId":"merchant-001","processor":"https://psp.example.test",
///  "readerIdentifier":"proxima-store-001","linkedAt":"2026-03-14T10:15:00Z"}
/// ```
public struct AccountLink: Hashable, Sendable, CustomStringConvertible {
    /// The merchant id claim of the token that linked it.
    public var merchantID: String
    /// The processor: the token's `iss`.
    public var processor: String
    /// The manifest's `readerIdentifier` when it was linked.
    public var readerIdentifier: String
    /// When it was linked (whole seconds).
    public var linkedAt: Date

    public init(merchantID: String, processor: String, readerIdentifier: String, linkedAt: Date) {
        self.merchantID = merchantID
        self.processor = processor
        self.readerIdentifier = readerIdentifier
        self.linkedAt = Date(timeIntervalSince1970: linkedAt.timeIntervalSince1970.rounded(.down))
    }

    public var description: String {
        "merchant \(merchantID) with \(processor) on \(readerIdentifier) since \(AccountLinkStore.format(linkedAt))"
    }

    /// Whether this link is for the merchant and processor of `token` on `readerIdentifier`.
    func covers(_ token: VerifiedReaderToken, readerIdentifier: String) -> Bool {
        merchantID == token.merchantID && processor == token.issuer && self.readerIdentifier == readerIdentifier
    }
}

/// Reads and writes the account link file; writes are atomic (a temporary file in the same directory, flushed to
/// disk, then renamed over the old one), so a reader sees the old link or the new one, never a partial file.
struct AccountLinkStore: Sendable {
    static let fileName = "account-link.json"

    /// The kernel's data directory (absolute).
    var directory: String
    var path: String { directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName }

    /// The link, or `nil` when none was made.
    /// - Throws: ``PaymentCardReaderError/accountLinkingCheckFailed(_:)`` when the file exists but cannot be read
    ///   or is not a valid link.
    func read() throws(PaymentCardReaderError) -> AccountLink? {
        // Every read checks the link, so a parsed link is kept per file and reused while the file's identity,
        // size and modification time stay the same (one stat(2) instead of open, read and parse). Another
        // process relinking renames a new file in place, which changes the inode and so the stamp.
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let stamp = FileStamp(info)
        if let cached = Self.cache.withLock({ $0[path] }), cached.stamp == stamp { return cached.link }
        let link = try readFile()
        if let link { Self.cache.withLock { $0[path] = (stamp, link) } }
        return link
    }

    /// What identifies one version of a file: inode, size and modification time (nanoseconds).
    private struct FileStamp: Equatable {
        var inode: UInt64
        var size: Int64
        var modified: Int64
        init(_ info: stat) {
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        }
    }

    private static let cache = Mutex<[String: (stamp: FileStamp, link: AccountLink)]>([:])

    private func readFile() throws(PaymentCardReaderError) -> AccountLink? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: [UInt8]
        do {
            data = try BoundedFile.read(path, limit: 16 * 1024)
        } catch {
            throw .accountLinkingCheckFailed(
                "cannot read \(path) (\(error.reason)); fix it or remove it and link again"
            )
        }
        do {
            var object = try StrictObject(
                try JSONValue.parse(data, limits: JSONValue.Limits(maxDepth: 4, maxBytes: 16 * 1024)),
                at: "",
                errorCode: .malformedData
            )
            _ = try object.integer("version", in: 1...1)
            let merchant = try object.string("merchantId")
            let processor = try object.string("processor")
            let reader = try object.string("readerIdentifier")
            let linkedAtText = try object.string("linkedAt")
            try object.finish()
            guard let linkedAt = Self.parse(linkedAtText) else {
                throw ProximaError(.malformedData, "linkedAt: \"\(linkedAtText)\" is not an ISO 8601 UTC time")
            }
            return AccountLink(merchantID: merchant, processor: processor, readerIdentifier: reader, linkedAt: linkedAt)
        } catch let error as ProximaError {
            throw .accountLinkingCheckFailed("\(path) is not a valid account link (\(error.pathAndReason)); link again")
        } catch {
            throw .accountLinkingCheckFailed("\(path) is not a valid account link (\(error)); link again")
        }
    }

    /// Replaces the link atomically, creating the data directory when needed.
    /// - Throws: ``PaymentCardReaderError/accountLinkingFailed(_:)`` naming the path and the system error.
    func write(_ link: AccountLink) throws(PaymentCardReaderError) {
        let text =
            JSONValue.object([
                ("version", .integer(1)),
                ("merchantId", .string(link.merchantID)),
                ("processor", .string(link.processor)),
                ("readerIdentifier", .string(link.readerIdentifier)),
                ("linkedAt", .string(Self.format(link.linkedAt))),
            ]).jsonText + "\n"
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw .accountLinkingFailed("cannot create the data directory \(directory): \(error.localizedDescription)")
        }
        let temporary = "\(directory)/.\(Self.fileName).\(UInt64.random(in: 0...UInt64.max)).tmp"
        do {
            try Self.writeDurably(Array(text.utf8), to: temporary)
            guard rename(temporary, path) == 0 else { throw SystemFailure("rename to \(path)", errno) }
            try Self.syncDirectory(directory)
        } catch let failure as SystemFailure {
            unlink(temporary)
            throw .accountLinkingFailed("cannot write \(path): \(failure)")
        } catch {
            unlink(temporary)
            throw .accountLinkingFailed("cannot write \(path): \(error)")
        }
    }

    /// `remove` the link (for tests and `relink` tooling); absent is fine.
    func remove() throws(PaymentCardReaderError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw .accountLinkingFailed("cannot remove \(path): \(SystemFailure("unlink", errno))")
        }
    }

    private struct SystemFailure: Error, CustomStringConvertible {
        var step: String
        var code: Int32
        init(_ step: String, _ code: Int32) {
            self.step = step
            self.code = code
        }
        var description: String { "\(step): \(String(cString: strerror(code))) (errno \(code))" }
    }

    /// Creates `path` (it must not exist), writes `bytes`, and flushes them to disk before closing.
    private static func writeDurably(_ bytes: [UInt8], to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemFailure("create \(path)", errno) }
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { posixWrite(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw SystemFailure("write \(path)", errno)
            }
            offset += written
        }
        guard fsync(descriptor) == 0 else { throw SystemFailure("fsync \(path)", errno) }
    }

    /// Makes the rename durable: fsync of the directory that holds the entry.
    private static func syncDirectory(_ directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SystemFailure("open \(directory)", errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw SystemFailure("fsync \(directory)", errno) }
    }

    /// `2026-03-14T10:15:00Z` (RFC 3339, UTC, whole seconds).
    static func format(_ date: Date) -> String {
        CivilTime(unixSeconds: Int64(date.timeIntervalSince1970.rounded(.down))).rfc3339
    }

    /// Parses exactly the form ``format(_:)`` writes.
    static func parse(_ text: String) -> Date? {
        CivilTime(rfc3339: text).map { Date(timeIntervalSince1970: TimeInterval($0.unixSeconds)) }
    }
}

/// `write(2)`; named apart because `AccountLinkStore.write(_:)` hides the global function inside the type.
private func posixWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
