import CProcessSpawn
import Foundation

/// The pcscd and vpcd readers that `scripts/pcscd-harness.sh` runs for the live tests (`make test` wraps the
/// test run in it through `scripts/with-test-services.sh`), and how a test stops and starts that pcscd.
///
/// The harness exports:
/// - `PROXIMA_PCSCD=1`: pcscd serves and the live tests may run;
/// - `PROXIMA_VPCD_READERS`, `PROXIMA_VPCD_PORTS`: the vpcd reader names and ports, in the same order;
/// - `PROXIMA_PCSCD_CONFIG_DIR`: the reader.conf.d pcscd was started with (to start it again alike);
/// - `PROXIMA_PCSCD_DISABLE_POLKIT=1`: pcscd had to be started with `--disable-polkit`;
/// - `PROXIMA_PCSCD_RESTART_TEST=1` (from `with-test-services.sh`): tests that stop pcscd may run.
public enum LivePCSCD {
    public static let environment = ProcessInfo.processInfo.environment

    public static let socketPath = "/run/pcscd/pcscd.comm"
    public static let pidPath = "/run/pcscd/pcscd.pid"

    /// pcscd is serving and the harness said so: `PROXIMA_PCSCD=1` and its socket exists.
    public static let isAvailable =
        environment["PROXIMA_PCSCD"] == "1" && FileManager.default.fileExists(atPath: socketPath)

    /// The harness passed the reader.conf.d it started pcscd with, so a test can start pcscd again alike.
    public static let canRestart = isAvailable && environment["PROXIMA_PCSCD_CONFIG_DIR"] != nil

    /// The run asked for the tests that stop pcscd as well (`PROXIMA_PCSCD_RESTART_TEST=1`).
    public static let restartTestsRequested = environment["PROXIMA_PCSCD_RESTART_TEST"] == "1"

    /// One vpcd reader: its PC/SC name and the TCP port its vpcd listens on for a card.
    public struct Reader: Sendable, CustomStringConvertible {
        public var name: String
        public var port: UInt16

        public init(name: String, port: UInt16) {
            self.name = name
            self.port = port
        }

        public var description: String { name }
    }

    /// The harness's six vpcd readers in order: `Virtual PCD 00 00/01` (the ones `PCSCTransportTests` use), then
    /// `Virtual PCD B 00 00/01` and `Virtual PCD C 00 00/01` (the integration tests').
    public static let readers: [Reader] = {
        let names = environment["PROXIMA_VPCD_READERS"]?.split(separator: ",").map(String.init)
        let ports = environment["PROXIMA_VPCD_PORTS"]?.split(separator: ",").compactMap { UInt16($0) }
        guard let names, let ports, names.count == ports.count, names.count >= 6 else {
            return [
                Reader(name: "Virtual PCD 00 00", port: 35963), Reader(name: "Virtual PCD 00 01", port: 35964),
                Reader(name: "Virtual PCD B 00 00", port: 35979), Reader(name: "Virtual PCD B 00 01", port: 35980),
                Reader(name: "Virtual PCD C 00 00", port: 35995), Reader(name: "Virtual PCD C 00 01", port: 35996),
            ]
        }
        return zip(names, ports).map { Reader(name: $0, port: $1) }
    }()

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

    /// Sends `signal` to pcscd and waits until the process is gone and reaped (at most 10 s).
    ///
    /// After `SIGTERM` pcscd removes its socket and PID file as it exits; after `SIGKILL` (as a crash would) they
    /// stay, and the next pcscd removes them because their PID is not running. A pcscd that a test of this process
    /// started (after stopping the harness's) is this process's child: it is reaped here, or its zombie's PID, still
    /// in the PID file, would make the next pcscd believe that another one runs. The harness reaps its own.
    /// - Throws: ``Failure`` when there is no PID or the signal cannot be sent; ``WaitTimeout`` when pcscd stays.
    public static func stop(signal: Int32) async throws {
        let pid = try pid()
        let isChild = parent(of: pid) == getpid()
        guard kill(pid, signal) == 0 else { throw Failure(description: "kill(\(pid), \(signal)): errno \(errno)") }
        try await waitUntil("pcscd \(pid) gone after signal \(signal)") {
            if isChild { _ = waitpid(pid, nil, WNOHANG) }
            return !isRunning(pid)
        }
    }

    /// Starts pcscd again as the harness did (its reader.conf.d, `--disable-polkit` if it needed it), once the old
    /// one's socket is gone (pcscd refuses to start while another one serves on it).
    ///
    /// The harness stops every pcscd that runs with its config directory, this one included.
    /// - Throws: ``Failure`` without `PROXIMA_PCSCD_CONFIG_DIR` or when pcscd cannot be spawned.
    public static func start() async throws {
        guard let directory = environment["PROXIMA_PCSCD_CONFIG_DIR"] else {
            throw Failure(description: "PROXIMA_PCSCD_CONFIG_DIR is not set: run under scripts/pcscd-harness.sh")
        }
        if let pid = try? pid(), isRunning(pid) {
            throw Failure(description: "pcscd \(pid) still runs; stop it first")
        }
        try spawn(configDirectory: directory, disablePolkit: environment["PROXIMA_PCSCD_DISABLE_POLKIT"] == "1")
    }

    /// Whether a process `pid` exists, a zombie included: pcscd checks the PID in its PID file the same way, so a
    /// new pcscd starts only once the old one has been reaped.
    static func isRunning(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 }

    /// The parent PID of `pid`, from `/proc/<pid>/stat`.
    static func parent(of pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? pid_t(fields[1]) : nil
    }

    /// Starts `pcscd -f -c configDirectory` in the background, its output discarded, no other descriptor inherited.
    ///
    /// posix_spawn with default signal handling and an empty signal mask: the test runner blocks SIGTERM, and a
    /// child would inherit that and ignore the harness's SIGTERM.
    static func spawn(configDirectory: String, disablePolkit: Bool) throws {
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
        // Nothing else of this process: pcscd outlives the test that starts it, and an inherited descriptor would
        // keep another test's pipe open (CrashSafetyTests waited forever for the end of its writer's output while
        // this pcscd held the pipe's write end).
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        var arguments = ["/usr/sbin/pcscd", "-f", "-c", configDirectory]
        if disablePolkit { arguments.append("--disable-polkit") }
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/usr/sbin/pcscd", &actions, &attributes, &argv, environ)
        guard spawned == 0 else { throw Failure(description: "posix_spawn pcscd: \(spawned)") }
    }
}
