import Foundation

/// The pcscd that `scripts/pcscd-harness.sh` runs, for live tests that stop and start it.
public enum PCSCDaemon {
    public static let socketPath = "/run/pcscd/pcscd.comm"
    public static let pidPath = "/run/pcscd/pcscd.pid"

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The running pcscd's PID, from its PID file (pcscd writes "PID\n\0").
    public static func pid() throws -> pid_t {
        let text = try String(contentsOfFile: pidPath, encoding: .utf8)
        guard let pid = text.split(whereSeparator: { !$0.isNumber }).first.flatMap({ pid_t($0) }) else {
            throw Failure(description: "\(pidPath) holds no PID")
        }
        return pid
    }

    /// The parent PID of `pid`, from `/proc/<pid>/stat`.
    public static func parent(of pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? pid_t(fields[1]) : nil
    }

    /// Starts `pcscd -f -c configDirectory` in the background, its output discarded.
    ///
    /// posix_spawn with default signal handling and an empty signal mask: the test runner blocks SIGTERM, and a
    /// child would inherit that and ignore the harness's SIGTERM. The harness stops every pcscd that runs with its
    /// config directory, this one included.
    public static func spawn(configDirectory: String, disablePolkit: Bool) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var arguments = ["/usr/sbin/pcscd", "-f", "-c", configDirectory]
        if disablePolkit { arguments.append("--disable-polkit") }
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/usr/sbin/pcscd", &actions, &attributes, &argv, environ)
        guard spawned == 0 else { throw Failure(description: "posix_spawn pcscd: \(spawned)") }
    }
}
