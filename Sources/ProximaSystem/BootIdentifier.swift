/// The kernel's boot id: a random UUID the Linux kernel draws at each boot (`/proc/sys/kernel/random/boot_id`),
/// the same for every process until the machine restarts. State that must not outlive a reboot (Apple's "a
/// store-and-forward session is invalid after a restart") records it and is refused when it differs.
public enum BootIdentifier {
    /// Where Linux publishes it.
    public static let path = "/proc/sys/kernel/random/boot_id"

    /// The current boot id, lowercased, without the newline.
    /// - Throws: ``SystemFile/Failure`` when the file cannot be read or does not hold a UUID (not Linux, no
    ///   `/proc`).
    public static func current(path: String = BootIdentifier.path) throws(SystemFile.Failure) -> String {
        let bytes = try SystemFile.read(path, limit: 64)
        let text = String(decoding: bytes, as: UTF8.self).trimmingNewlines().lowercased()
        let hex = text.filter { $0 != "-" }
        guard text.count == 36, hex.count == 32, hex.allSatisfy(\.isHexDigit) else {
            throw SystemFile.Failure("read the boot id from", path, problem: "it does not hold a UUID")
        }
        return text
    }
}

extension String {
    fileprivate func trimmingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == "\r" || last == " " { text = text.dropLast() }
        return String(text)
    }
}
