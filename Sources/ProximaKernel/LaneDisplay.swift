package import ProximaCore
import Synchronization

/// What a capability shows on a lane's attendant display and never hands to the app: the elements of an mDL
/// display request (ISO/IEC 18013-5; Apple's `MobileDriversLicenseDisplayRequest` shows them in system UI).
package struct LaneDisplayContent: Sendable {
    /// One labelled value: text, or an image (a portrait) as bytes.
    package struct Item: Sendable {
        package var label: String
        package var text: String?
        package var image: [UInt8]?

        package init(label: String, text: String? = nil, image: [UInt8]? = nil) {
            self.label = label
            self.text = text
            self.image = image
        }
    }

    /// The heading: what was checked and how it verified (no identity value).
    package var title: String
    package var items: [Item]

    package init(title: String, items: [Item]) {
        self.title = title
        self.items = items
    }
}

/// The attendant displays of a kernel's lanes: the host (the CLI's `--display`, a store's attendant screen
/// integration, a test) registers one sink per lane; capabilities show content on it. An app reaches none of it:
/// registration and display are `package`.
///
/// Invariant: `sinks` is only touched under its `Mutex`; a sink is called outside it.
package final class LaneDisplays: Sendable {
    package typealias Sink = @Sendable (LaneDisplayContent) -> Void
    private let sinks = Mutex<[LaneID: Sink]>([:])

    package init() {}

    /// Makes `sink` the display of `lane`, replacing any other.
    package func register(_ sink: @escaping Sink, for lane: LaneID) { sinks.withLock { $0[lane] = sink } }

    package func unregister(_ lane: LaneID) { _ = sinks.withLock { $0.removeValue(forKey: lane) } }

    /// Whether `lane` has a display.
    package func hasDisplay(_ lane: LaneID) -> Bool { sinks.withLock { $0[lane] != nil } }

    /// Shows `content` on `lane`'s display; `false` when the lane has none.
    package func show(_ content: LaneDisplayContent, on lane: LaneID) -> Bool {
        guard let sink = sinks.withLock({ $0[lane] }) else { return false }
        sink(content)
        return true
    }
}
