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
}
