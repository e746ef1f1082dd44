/// A set of reader slots as a bit set: slot `i` is bit `i % 64` of word `i / 64`.
///
/// The pool keeps one per property (present, healthy, leased, extended length, shared, claimed by lane L), so
/// "a free reader this lane may use" is a few word-wise ANDs instead of a scan over every reader.
struct ReaderSet: Sendable {
    private(set) var words: [UInt64] = []

    @inline(__always)
    func word(_ index: Int) -> UInt64 { index < words.count ? words[index] : 0 }

    func contains(_ slot: Int) -> Bool { word(slot >> 6) & (1 << UInt64(slot & 63)) != 0 }

    mutating func insert(_ slot: Int) {
        let index = slot >> 6
        if index >= words.count { words.append(contentsOf: repeatElement(0, count: index - words.count + 1)) }
        words[index] |= 1 << UInt64(slot & 63)
    }

    mutating func remove(_ slot: Int) {
        let index = slot >> 6
        guard index < words.count else { return }
        words[index] &= ~(1 << UInt64(slot & 63))
    }

    mutating func update(_ slot: Int, to member: Bool) {
        if member { insert(slot) } else { remove(slot) }
    }

    var isEmpty: Bool { words.allSatisfy { $0 == 0 } }
}

/// A reference to a waiting request: its slot in the waiter table and its arrival sequence number.
///
/// Queues and the deadline heap hold these and drop them lazily: an entry is live only while the slot still
/// holds the same sequence number, so removing a cancelled or expired waiter is O(1).
struct WaiterRef: Hashable, Sendable {
    var index: Int
    var sequence: UInt64
}

/// A FIFO ring buffer of waiter references (a growable power-of-two array; no allocation once warm).
struct WaiterQueue: Sendable {
    private var storage: [WaiterRef] = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    var first: WaiterRef? { count == 0 ? nil : storage[head] }

    mutating func append(_ ref: WaiterRef) {
        if count == storage.count { grow() }
        storage[(head + count) & (storage.count - 1)] = ref
        count += 1
    }

    @discardableResult
    mutating func removeFirst() -> WaiterRef? {
        guard count > 0 else { return nil }
        let ref = storage[head]
        head = (head + 1) & (storage.count - 1)
        count -= 1
        return ref
    }

    /// Empties the queue but keeps its storage.
    mutating func removeAll() {
        head = 0
        count = 0
    }

    /// Calls `body` on every entry, oldest first.
    func forEach(_ body: (WaiterRef) -> Void) {
        var position = head
        for _ in 0..<count {
            body(storage[position])
            position = (position + 1) & (storage.count - 1)
        }
    }

    private mutating func grow() {
        let newCapacity = max(8, storage.count * 2)
        var newStorage: [WaiterRef] = []
        newStorage.reserveCapacity(newCapacity)
        forEach { newStorage.append($0) }
        newStorage.append(contentsOf: repeatElement(WaiterRef(index: 0, sequence: 0), count: newCapacity - count))
        storage = newStorage
        head = 0
    }
}

/// A binary min-heap of (deadline, waiter) pairs, ordered by deadline then arrival.
struct DeadlineHeap: Sendable {
    struct Entry: Sendable {
        var deadline: Duration
        var ref: WaiterRef
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }
    var min: Entry? { entries.first }

    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.ref.sequence < b.ref.sequence)
    }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        siftUp(entries.count - 1)
    }

    @discardableResult
    mutating func popMin() -> Entry? {
        guard let top = entries.first else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return top
    }

    /// Keeps only the entries `isLive` accepts and restores heap order, in O(n).
    mutating func compact(keeping isLive: (WaiterRef) -> Bool) {
        entries.removeAll { !isLive($0.ref) }
        var index = entries.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    mutating func removeAll() { entries.removeAll(keepingCapacity: true) }

    private mutating func siftUp(_ start: Int) {
        var child = start
        let entry = entries[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(entry, entries[parent]) else { break }
            entries[child] = entries[parent]
            child = parent
        }
        entries[child] = entry
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = entries.count
        let entry = entries[parent]
        while true {
            var child = 2 * parent + 1
            guard child < count else { break }
            if child + 1 < count && Self.precedes(entries[child + 1], entries[child]) { child += 1 }
            guard Self.precedes(entries[child], entry) else { break }
            entries[parent] = entries[child]
            parent = child
        }
        entries[parent] = entry
    }
}
