public import ProximaCore
public import ProximaKernel

/// A lane's attendant display: where the verified elements of a ``MobileDriversLicenseDisplayRequest`` are shown
/// (Apple shows them in system UI; a store shows them on the attendant's screen at the lane).
///
/// The host implements it (the store's attendant screen, a customer-facing display driver) and attaches it to a
/// lane with ``ProximaKernel/Kernel/attachAttendantDisplay(_:toLane:)``. The app that asked for the display request
/// receives only ``MobileDriversLicenseDisplayRequest/Response`` (the validation outcome); the elements go here
/// and nowhere else. An implementation must not log or persist what it is shown.
public protocol AttendantDisplay: Sendable {
    /// Shows one verified document. Called once per display request, on the reading task, before the app's
    /// `readDocument` returns; return promptly (hand the content to the screen's own queue).
    func show(_ content: AttendantDisplayContent)
}

/// What an attendant display shows for one verified document: a heading, then labelled lines: `docType`, `issuer`
/// (the IACA's subject), each requested element that came back in the order asked (text, or `(not returned)`; a
/// portrait as text `<N bytes jpeg>` with its image bytes), and `verified: issuer, device`.
///
/// Identity data: it reaches only the attached display, never a request's response. Its `description` prints the
/// labels, never the values.
public struct AttendantDisplayContent: Sendable, CustomStringConvertible {
    /// One labelled line.
    public struct Item: Sendable {
        /// The ISO/IEC 18013-5 element identifier (`given_name`, `age_over_21`, `portrait`) or `docType`, `issuer`,
        /// `verified`.
        public let label: String
        /// The value as text (dates `YYYY-MM-DD`, booleans `true`/`false`, byte strings by size and kind).
        public let text: String?
        /// The image bytes of a portrait (JPEG or JPEG 2000), else `nil`.
        public let image: [UInt8]?
    }

    /// What was checked and that it verified, e.g. `org.iso.18013.5.1.mDL verified` (no identity value).
    public let title: String
    public let items: [Item]

    init(_ content: LaneDisplayContent) {
        title = content.title
        items = content.items.map { Item(label: $0.label, text: $0.text, image: $0.image) }
    }

    public var description: String {
        "AttendantDisplayContent(\(title), \(items.map(\.label).joined(separator: ", ")))"
    }
}

extension Kernel {
    /// Attaches `display` to `lane`: ``MobileDriversLicenseDisplayRequest``s read on the lane show their
    /// elements on it. Replaces the lane's previous display. A display request on a lane without one is refused
    /// (``MobileDocumentReaderError/serviceUnavailable(_:)``) rather than shown nowhere.
    ///
    /// - Throws: ``MobileDocumentReaderError/notSupported(_:)`` when the manifest has no such lane.
    public func attachAttendantDisplay(_ display: any AttendantDisplay, toLane lane: LaneID) throws {
        guard manifest.lanes.contains(where: { $0.id == lane }) else {
            let lanes = manifest.lanes.map(\.id.rawValue).joined(separator: ", ")
            throw MobileDocumentReaderError.notSupported("lane \"\(lane)\" is not in the manifest (lanes: \(lanes))")
        }
        laneDisplays.register({ display.show(AttendantDisplayContent($0)) }, for: lane)
    }

    /// Detaches the attendant display of `lane`, if any; later display requests on it are refused.
    public func detachAttendantDisplay(fromLane lane: LaneID) {
        laneDisplays.unregister(lane)
    }

    /// Whether `lane` has an attendant display attached.
    public func hasAttendantDisplay(lane: LaneID) -> Bool { laneDisplays.hasDisplay(lane) }
}
