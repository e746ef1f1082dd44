public import ProximaCore

/// What a lane does when every reader it may use is busy.
public enum QueuePolicy: Hashable, Sendable {
    /// Wait in the lane's FIFO queue, at most `maxWait` (the request's own deadline may be sooner).
    case wait(maxWait: Duration)
    /// Fail at once with `readerBusy`.
    case failFast
}

/// One lane from the manifest: which readers serve it and how it queues.
public struct LaneConfiguration: Hashable, Sendable {
    public var id: LaneID
    /// Readers named by their exact id.
    public var readerIDs: [ReaderID]
    /// Glob patterns (`*`, `?`) matched against reader names (`ACS ACR122U*`).
    public var readerNamePatterns: [String]
    /// Whether the lane may use readers of the shared pool (readers no lane claims) when its own are busy.
    public var overflowToShared: Bool
    public var queuePolicy: QueuePolicy

    public init(
        id: LaneID,
        readerIDs: [ReaderID] = [],
        readerNamePatterns: [String] = [],
        overflowToShared: Bool = false,
        queuePolicy: QueuePolicy = .wait(maxWait: .seconds(30))
    ) {
        self.id = id
        self.readerIDs = readerIDs
        self.readerNamePatterns = readerNamePatterns
        self.overflowToShared = overflowToShared
        self.queuePolicy = queuePolicy
    }

    /// Whether the lane claims `reader` by id or name pattern.
    public func claims(_ reader: ReaderInfo) -> Bool {
        readerIDs.contains(reader.id) || readerNamePatterns.contains { GlobPattern.matches($0, reader.name) }
    }
}

/// Shell-style glob matching (`*` any run, `?` one character), as reader-name patterns use.
public enum GlobPattern {
    public static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.unicodeScalars)
        let t = Array(text.unicodeScalars)
        var pi = 0
        var ti = 0
        var star = -1
        var mark = 0
        while ti < t.count {
            if pi < p.count && (p[pi] == "?" || p[pi] == t[ti]) {
                pi += 1
                ti += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi
                mark = ti
                pi += 1
            } else if star >= 0 {
                pi = star + 1
                mark += 1
                ti = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
