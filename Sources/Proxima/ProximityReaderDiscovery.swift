internal import PaymentCapability

/// Merchant education (Apple's `ProximityReaderDiscovery`, iOS 18): how-to content for staff and customers, as
/// structured, localizable values the app can show itself, or shown on the lane's attendant display with
/// ``presentContent(_:from:)`` (the lane's output sink; `proxima` prints it).
///
/// ```swift
/// let discovery = ProximityReaderDiscovery()
/// try await discovery.present()          // how to tap, on the default reader's lane
/// ```
///
/// The content is written in the package (English, French, German) and in the store's translations file when the
/// manifest names one (`capabilities.payment.education`: other languages, or its own wording); a language with
/// neither falls back to English. Apple fetches it from its servers, so `networkUnavailable` never happens here.
public final class ProximityReaderDiscovery: Sendable {
    /// A topic of merchant education (Apple's `ProximityReaderDiscovery.Topic`).
    public enum Topic: Hashable, Sendable {
        case payment(Payment)

        /// Payment topics.
        public enum Payment: Hashable, Sendable {
            /// How a customer taps a card, phone or watch to pay.
            case howToTap
        }
    }

    /// One piece of content: Apple's `id` and `description`, plus the structured parts a display shows.
    public struct Content: Identifiable, Hashable, Sendable, CustomStringConvertible {
        /// Stable id of the topic (`payment.howToTap`).
        public let id: String
        public let title: String
        public let summary: String
        /// The steps, in order, without numbers.
        public let steps: [String]
        /// A simple picture drawn in text, one row per element.
        public let picture: [String]
        /// The ISO 639-1 language of the strings (`en`, `fr`, `de`).
        public let languageCode: String
        /// Title and summary (Apple's `description`).
        public var description: String { "\(title): \(summary)" }
        /// Title, picture and numbered steps, as the lane display shows them.
        public let displayLines: [String]

        init(_ content: MerchantEducation.Content) {
            id = content.id
            title = content.title
            summary = content.summary
            steps = content.steps
            picture = content.picture
            languageCode = content.language
            displayLines = content.displayLines
        }
    }

    /// Why content could not be had or shown (Apple's `ProximityReaderDiscovery.ContentError`).
    public enum ContentError: Error, Hashable, Sendable {
        /// No content for that topic.
        case contentNotFound
        /// The lane display could not be reached (no kernel or lane: the reason says why).
        case contentDisplayFailed(String)
        case notSupported
        case networkUnavailable
        case systemBusy
    }

    private let reader: PaymentCardReader
    private let languageCode: String?

    /// Content in the process's language, shown on the lane of the process-wide default reader
    /// (`PaymentCardReader()`).
    public convenience init() {
        self.init(reader: PaymentCardReader())
    }

    /// Content in `languageCode` (ISO 639-1; `nil`: the process's locale), shown on `reader`'s lane by
    /// ``present()``.
    public init(reader: PaymentCardReader, languageCode: String? = nil) {
        self.reader = reader
        self.languageCode = languageCode
    }

    private var language: String { languageCode ?? MerchantEducation.currentLanguage }

    /// The store's translations, from the reader's payment settings; none when the reader has no settings (the
    /// built-in texts still serve).
    private var translations: MerchantEducation.Translations {
        (try? reader.service.get().settings.education) ?? MerchantEducation.Translations()
    }

    private func content(_ topic: MerchantEducation.Topic) -> Content {
        Content(MerchantEducation.content(topic, language: language, translations: translations))
    }

    /// The content of `topic`.
    public func content(for topic: Topic) async throws -> Content {
        switch topic {
        case .payment(.howToTap): content(.paymentHowToTap)
        }
    }

    /// Every piece of content: how to tap, how to present a loyalty pass, how to present a mobile ID.
    public var contentList: [Content] {
        get async throws { MerchantEducation.Topic.allCases.map(content) }
    }

    /// Shows `content` on the attendant display of `reader`'s lane (a lane output event of its kernel).
    /// - Throws: ``ContentError/contentDisplayFailed(_:)`` when the reader has no kernel (its manifest did not
    ///   load).
    public func presentContent(_ content: Content, from reader: PaymentCardReader) async throws {
        guard let kernel = reader.kernel, let lane = reader.lane else {
            throw ContentError.contentDisplayFailed("the reader has no kernel: its manifest could not be loaded")
        }
        kernel.show(onLane: lane, content.displayLines)
    }

    /// How to tap (``Topic/Payment/howToTap``) on this discovery's reader's lane: the usage sketch's
    /// `try await discovery.present()`.
    public func present() async throws {
        try await presentContent(try await content(for: .payment(.howToTap)), from: reader)
    }
}
