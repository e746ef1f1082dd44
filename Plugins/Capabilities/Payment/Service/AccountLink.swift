package import Foundation
internal import ProximaCore
internal import ProximaSystem
internal import Synchronization

/// The merchant account linked on a kernel: which merchant, with which processor, when, for which reader
/// identifier. Kept in `<dataDirectory>/account-link.json`.
///
/// The file (UTF-8 JSON, mode 0600):
///
/// ```json
/// {"version":1,"merchantId":"merchant-001","processor":"https://psp.example.test",
///  "readerIdentifier":"proxima-store-001","linkedAt":"2026-03-14T10:15:00Z"}
/// ```
package struct AccountLink: Hashable, Sendable, CustomStringConvertible {
    /// The merchant id claim of the token that linked it.
    package var merchantID: String
    /// The processor: the token's `iss`.
    package var processor: String
    /// The manifest's `readerIdentifier` when it was linked.
    package var readerIdentifier: String
    /// When it was linked (whole seconds).
    package var linkedAt: Date

    package init(merchantID: String, processor: String, readerIdentifier: String, linkedAt: Date) {
        self.merchantID = merchantID
        self.processor = processor
        self.readerIdentifier = readerIdentifier
        self.linkedAt = Date(timeIntervalSince1970: linkedAt.timeIntervalSince1970.rounded(.down))
    }

    package var description: String {
        "merchant \(merchantID) with \(processor) on \(readerIdentifier) since \(AccountLinkStore.format(linkedAt))"
    }

    /// Whether this link is for the merchant and processor of `token` on `readerIdentifier`.
    func covers(_ token: VerifiedReaderToken, readerIdentifier: String) -> Bool {
        merchantID == token.merchantID && processor == token.issuer && self.readerIdentifier == readerIdentifier
    }
}

/// Reads and writes the account link file through the system-call layer; writes are atomic and durable
/// (`SystemFile.writeAtomically`: a 0600 file in the same directory, flushed, renamed over the old one), so a
/// reader sees the old link or the new one, never a partial file.
package struct AccountLinkStore: Sendable {
    static let fileName = "account-link.json"

    /// The kernel's data directory (absolute).
    package var directory: String
    package var path: String { directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName }

    package init(directory: String) { self.directory = directory }

    /// The link, or `nil` when none was made.
    /// - Throws: ``PaymentServiceError/Code/accountLinkingCheckFailed`` when the file exists but cannot be read or
    ///   is not a valid link.
    package func read() throws(PaymentServiceError) -> AccountLink? {
        // Every read checks the link, so a parsed link is kept per file and reused while the file's identity,
        // size and modification time stay the same (one stat(2) instead of open, read and parse). Another
        // process relinking renames a new file in place, which changes the inode and so the stamp.
        guard let stamp = try? FileStatus.of(path) else { return nil }
        if let cached = Self.cache.withLock({ $0[path] }), cached.stamp == stamp { return cached.link }
        let link = try readFile()
        Self.cache.withLock { $0[path] = (stamp, link) }
        return link
    }

    private static let cache = Mutex<[String: (stamp: FileStatus, link: AccountLink)]>([:])

    private func readFile() throws(PaymentServiceError) -> AccountLink {
        let data: [UInt8]
        do {
            data = try SystemFile.read(path, limit: 16 * 1024)
        } catch {
            throw PaymentServiceError(
                .accountLinkingCheckFailed,
                "cannot read \(path) (\(error.reason)); fix it or remove it and link again",
                underlying: error
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
        } catch {
            throw PaymentServiceError(
                .accountLinkingCheckFailed,
                "\(path) is not a valid account link (\(error)); link again",
                underlying: error
            )
        }
    }

    /// Replaces the link atomically, creating the data directory (0700) when needed.
    /// - Throws: ``PaymentServiceError/Code/accountLinkingFailed`` naming the path and the system error.
    package func write(_ link: AccountLink) throws(PaymentServiceError) {
        let text =
            JSONValue.object([
                ("version", .integer(1)),
                ("merchantId", .string(link.merchantID)),
                ("processor", .string(link.processor)),
                ("readerIdentifier", .string(link.readerIdentifier)),
                ("linkedAt", .string(Self.format(link.linkedAt))),
            ]).jsonText + "\n"
        do {
            try SystemFile.createDirectory(directory, permissions: 0o700)
            try SystemFile.writeAtomically(Array(text.utf8), to: path, permissions: 0o600)
        } catch {
            throw PaymentServiceError(.accountLinkingFailed, "\(error)", underlying: error)
        }
    }

    /// Removes the link (for tests and relink tooling); absent is fine.
    package func remove() throws(PaymentServiceError) {
        do {
            try SystemFile.remove(path)
        } catch {
            throw PaymentServiceError(.accountLinkingFailed, "\(error)", underlying: error)
        }
    }

    /// `2026-03-14T10:15:00Z` (RFC 3339, UTC, whole seconds).
    package static func format(_ date: Date) -> String {
        CivilTime(unixSeconds: Int64(date.timeIntervalSince1970.rounded(.down))).rfc3339
    }

    /// Parses exactly the form ``format(_:)`` writes.
    package static func parse(_ text: String) -> Date? {
        CivilTime(rfc3339: text).map { Date(timeIntervalSince1970: TimeInterval($0.unixSeconds)) }
    }
}
