import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import Testing

@testable import PaymentCapability

/// `ProximityReaderDiscovery`: structured, localizable how-to content, shown on a lane's display sink.
@Suite struct MerchantEducationTests {
    @Test func howToTapIsStructuredAndLocalized() throws {
        let english = MerchantEducation.content(.paymentHowToTap, language: "en")
        let french = MerchantEducation.content(.paymentHowToTap, language: "fr-FR")
        let german = MerchantEducation.content(.paymentHowToTap, language: "de")
        #expect(english.id == "payment.howToTap")
        #expect(english.title == "How to tap to pay")
        #expect(french.language == "fr")
        #expect(french.title == "Payer sans contact")
        #expect(german.language == "de")
        #expect(english.steps.count == french.steps.count)
        #expect(english.steps.count == german.steps.count)
        #expect(english.picture == french.picture)
        #expect(english.picture.allSatisfy { $0.unicodeScalars.allSatisfy(\.isASCII) })
        // Unknown languages and missing translations fall back to English.
        let klingon = MerchantEducation.content(.paymentHowToTap, language: "tlh")
        #expect(klingon.language == "en" && klingon.title == english.title)
        #expect(MerchantEducation.content(.identityHowToPresent, language: "de").title == "How to present a mobile ID")
        // Display lines: title, underline, picture, summary, numbered steps.
        let lines = english.displayLines
        #expect(lines.first == english.title)
        #expect(lines.count == 2 + english.picture.count + 1 + english.steps.count)
        #expect(lines.last == "\(english.steps.count). \(english.steps[english.steps.count - 1])")
    }

    @Test func presentShowsOnTheLaneOfTheReader() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let display = try #require(reader.kernel).events.subscribe()
            let discovery = ProximityReaderDiscovery(reader: reader, languageCode: "fr")
            let list = try await discovery.contentList
            #expect(list.map(\.id) == ["payment.howToTap", "loyalty.howToPresent", "identity.howToPresent"])
            try await discovery.present()
            try await discovery.presentContent(list[1], from: reader)
            var outputs: [(LaneID?, String)] = []
            for await event in display {
                guard case .laneOutput(let text) = event.kind else { continue }
                outputs.append((event.lane, text))
                if outputs.count == 2 { break }
            }
            #expect(outputs.map(\.0) == ["lane-1", "lane-1"])
            #expect(outputs[0].1.hasPrefix("Payer sans contact\n"))
            #expect(outputs[1].1.hasPrefix("Utiliser une carte de fidélité\n"))
        }
    }

    /// A translations file with `languages` as its body.
    static func translations(_ languages: String) throws -> MerchantEducation.Translations {
        try MerchantEducation.Translations(json: try JSONValue.parse(#"{ "languages": \#(languages) }"#))
    }

    static let spanishHowToTap = #"""
        { "es": { "payment.howToTap": { "title": "Cómo pagar sin contacto", "summary": "Acerque la tarjeta.",
                                        "steps": ["Espere.", "Acerque la tarjeta al lector."] } } }
        """#

    @Test func aStoresTranslationsComeFirstThenTheBuiltInThenEnglish() throws {
        let file = try Self.translations(
            #"""
            { "es": { "payment.howToTap": { "title": "Cómo pagar sin contacto", "summary": "Acerque la tarjeta.",
                                            "steps": ["Espere.", "Acerque la tarjeta al lector."] } },
              "fr": { "payment.howToTap": { "title": "Payez sans contact", "summary": "Le mot du magasin.",
                                            "steps": ["Approchez la carte."] } },
              "en": { "loyalty.howToPresent": { "title": "Show your club card", "summary": "Our words.",
                                                "steps": ["Hold the phone to the reader."] } } }
            """#
        )
        let spanish = MerchantEducation.content(.paymentHowToTap, language: "es-MX", translations: file)
        #expect(spanish.language == "es" && spanish.title == "Cómo pagar sin contacto")
        #expect(spanish.steps == ["Espere.", "Acerque la tarjeta al lector."])
        #expect(spanish.picture == MerchantEducation.content(.paymentHowToTap, language: "en").picture)
        // The store's French rewords the built-in French.
        #expect(
            MerchantEducation.content(.paymentHowToTap, language: "fr", translations: file).title
                == "Payez sans contact"
        )
        // A topic the store's language lacks: the built-in of that language (French), else the store's English,
        // else the built-in English.
        let frenchLoyalty = MerchantEducation.content(.loyaltyHowToPresent, language: "fr", translations: file)
        #expect(frenchLoyalty.language == "fr" && frenchLoyalty.title == "Utiliser une carte de fidélité")
        let spanishLoyalty = MerchantEducation.content(.loyaltyHowToPresent, language: "es", translations: file)
        #expect(spanishLoyalty.language == "en" && spanishLoyalty.title == "Show your club card")
        let spanishID = MerchantEducation.content(.identityHowToPresent, language: "es", translations: file)
        #expect(spanishID.language == "en" && spanishID.title == "How to present a mobile ID")
    }

    @Test(arguments: [
        (#"{ "ES": {} }"#, "languages.ES", "ISO 639-1"),
        (#"{ "spa": {} }"#, "languages.spa", "ISO 639-1"),
        (#"{ "es": { "payment.howToPay": {} } }"#, "languages.es.payment.howToPay", "unknown topic"),
        (
            #"{ "es": { "payment.howToTap": { "title": "T", "summary": "S", "steps": [] } } }"#,
            "languages.es.payment.howToTap.steps", "0 steps"
        ),
        (
            #"{ "es": { "payment.howToTap": { "title": "", "summary": "S", "steps": ["a"] } } }"#,
            "languages.es.payment.howToTap.title", ""
        ),
        (
            #"{ "es": { "payment.howToTap": { "title": "T", "summary": "S", "steps": ["a", 2] } } }"#,
            "languages.es.payment.howToTap.steps[1]", ""
        ),
        (
            #"{ "es": { "payment.howToTap": { "title": "T", "summary": "S", "steps": ["a"], "image": "x" } } }"#,
            "languages.es.payment.howToTap.image", ""
        ),
        ("[]", "languages", ""),
    ])
    func aBrokenTranslationsFileNamesWhereAndWhat(languages: String, path: String, reason: String) throws {
        let error = try #require(throws: ProximaError.self) { try Self.translations(languages) }
        #expect(error.code == .invalidManifest)
        #expect(error.jsonPath == path, "\(error)")
        #expect(reason.isEmpty || error.reason.contains(reason), "\(error)")
    }

    @Test func theManifestNamesTheFileAndDiscoveryUsesIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.path + "/education.json"
        try Data(#"{ "languages": \#(Self.spanishHowToTap) }"#.utf8).write(to: URL(fileURLWithPath: file))
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: directory.path,
            payment: PaymentHarness.paymentBlock(extra: #""education": "\#(file)""#)
        )
        try await PaymentHarness.withKernel(manifest) { kernel in
            let reader = PaymentCardReader(kernel: kernel, lane: "lane-1")
            let spanish = ProximityReaderDiscovery(reader: reader, languageCode: "es")
            let howToTap = try await spanish.content(for: .payment(.howToTap))
            #expect(howToTap.languageCode == "es" && howToTap.title == "Cómo pagar sin contacto")
            #expect(try await spanish.contentList.map(\.languageCode) == ["es", "en", "en"])
        }
        // A file that is not there is a manifest error naming the key.
        let missing = PaymentHarness.manifestText(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: directory.path,
            payment: PaymentHarness.paymentBlock(extra: #""education": "\#(directory.path)/none.json""#)
        )
        let error = try #require(throws: ManifestError.self) {
            try Manifest.parse(
                Array(missing.utf8),
                baseDirectory: Package.configDirectory,
                registry: BuiltinPlugins.registry
            )
        }
        #expect("\(error)".contains("capabilities.payment.education: cannot read"), "\(error)")
        #expect("\(error)".contains("none.json: no such file"), "\(error)")
    }

    @Test func theShippedSpanishFileReads() throws {
        let file = try MerchantEducation.Translations(
            contentsOf: Package.configDirectory + "/education/merchant-education.json"
        )
        for topic in MerchantEducation.Topic.allCases {
            let content = MerchantEducation.content(topic, language: "es", translations: file)
            #expect(content.language == "es", "\(topic)")
            #expect(content.steps.count == MerchantEducation.content(topic, language: "en").steps.count, "\(topic)")
        }
    }
}
