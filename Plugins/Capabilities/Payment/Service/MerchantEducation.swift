internal import Foundation

/// Merchant education: how-to content a store shows its staff and customers (Apple's `ProximityReaderDiscovery`
/// topics), as structured, localizable values: a title, a summary, numbered steps and a simple picture drawn in
/// text so that any lane display (a terminal, an attendant screen, a log) can show it.
///
/// Strings live in ``strings`` per language (`en`, `fr`, `de`); an unknown language falls back to English.
package enum MerchantEducation {
    /// A topic of the content (Apple's `ProximityReaderDiscovery.Topic`).
    package enum Topic: String, Hashable, Sendable, CaseIterable {
        /// How a customer taps a card, phone or watch to pay.
        case paymentHowToTap = "payment.howToTap"
        /// How a customer presents a loyalty pass (VAS) before paying.
        case loyaltyHowToPresent = "loyalty.howToPresent"
        /// How a customer presents a mobile ID (ISO 18013-5).
        case identityHowToPresent = "identity.howToPresent"
    }

    /// One piece of content, in one language.
    package struct Content: Hashable, Sendable, Identifiable {
        /// Stable id: the topic's raw value (`payment.howToTap`).
        package var id: String
        package var topic: Topic
        /// The language the strings are in (`en`, `fr`, `de`).
        package var language: String
        package var title: String
        package var summary: String
        package var steps: [String]
        /// The picture, one line of text per row (ASCII, so every display can show it).
        package var picture: [String]

        /// Title, picture and numbered steps as the lines a lane display shows.
        package var displayLines: [String] {
            [title, String(repeating: "=", count: title.count)] + picture + [summary]
                + steps.enumerated().map { "\($0.offset + 1). \($0.element)" }
        }
    }

    /// The content of `topic` in `language` (an ISO 639-1 code; region and script are ignored), English when
    /// there is no translation.
    package static func content(_ topic: Topic, language: String) -> Content {
        let code = String(language.lowercased().prefix { $0.isLetter })
        let table = strings[code] ?? strings["en"] ?? [:]
        let text = table[topic] ?? strings["en"]?[topic] ?? Text(title: topic.rawValue, summary: "", steps: [])
        return Content(
            id: topic.rawValue,
            topic: topic,
            language: strings[code] == nil ? "en" : code,
            title: text.title,
            summary: text.summary,
            steps: text.steps,
            picture: pictures[topic] ?? []
        )
    }

    /// The language of the process's locale (`Locale.current`), as used when none is given.
    package static var currentLanguage: String { Locale.current.language.languageCode?.identifier ?? "en" }

    struct Text: Hashable, Sendable {
        var title: String
        var summary: String
        var steps: [String]
    }

    /// Pictures are language-free.
    static let pictures: [Topic: [String]] = [
        .paymentHowToTap: [
            "   .-----------.        ))) ",
            "   |  READER   |  <--  [====]  card, phone or watch",
            "   |   ((o))   |        flat, 1-4 cm",
            "   '-----------'        hold until the beep",
        ],
        .loyaltyHowToPresent: [
            "   .-----------.        ))) ",
            "   |  READER   |  <--  [ [] ]  phone with the pass",
            "   |   ((o))   |        one tap: pass, then payment",
            "   '-----------'",
        ],
        .identityHowToPresent: [
            "   .-----------.        ))) ",
            "   |  READER   |  <--  [ ID ]  phone or watch",
            "   |   ((o))   |        keep it there until done",
            "   '-----------'",
        ],
    ]

    /// The translations, by ISO 639-1 language code.
    static let strings: [String: [Topic: Text]] = [
        "en": [
            .paymentHowToTap: Text(
                title: "How to tap to pay",
                summary: "Contactless cards, phones and watches pay by holding them on the reader.",
                steps: [
                    "Wait until the reader shows it is ready.",
                    "Hold the card, phone or watch flat on the reader's contactless symbol.",
                    "Keep it there until the reader beeps or shows that the card was read.",
                    "If asked, enter the PIN or follow the instructions on the phone.",
                ]
            ),
            .loyaltyHowToPresent: Text(
                title: "How to use a loyalty pass",
                summary: "The pass and the payment are read in one tap.",
                steps: [
                    "Open nothing: the phone offers the pass when it is held on the reader.",
                    "Hold the phone on the reader's contactless symbol.",
                    "Confirm on the phone if it asks, then keep it there for the payment.",
                ]
            ),
            .identityHowToPresent: Text(
                title: "How to present a mobile ID",
                summary: "The reader asks the phone for the ID data it needs; the customer approves on the phone.",
                steps: [
                    "Hold the phone or watch on the reader's contactless symbol.",
                    "Approve the request on the phone.",
                    "Keep it there until the reader shows the result.",
                ]
            ),
        ],
        "fr": [
            .paymentHowToTap: Text(
                title: "Payer sans contact",
                summary: "Les cartes, téléphones et montres sans contact paient en les tenant sur le lecteur.",
                steps: [
                    "Attendez que le lecteur indique qu'il est prêt.",
                    "Posez la carte, le téléphone ou la montre à plat sur le symbole sans contact du lecteur.",
                    "Gardez-la jusqu'au bip ou jusqu'à ce que le lecteur indique que la carte est lue.",
                    "Si demandé, saisissez le code ou suivez les instructions du téléphone.",
                ]
            ),
            .loyaltyHowToPresent: Text(
                title: "Utiliser une carte de fidélité",
                summary: "La carte de fidélité et le paiement sont lus en un seul passage.",
                steps: [
                    "Rien à ouvrir : le téléphone propose la carte quand il est tenu sur le lecteur.",
                    "Tenez le téléphone sur le symbole sans contact du lecteur.",
                    "Confirmez sur le téléphone s'il le demande, puis gardez-le pour le paiement.",
                ]
            ),
            .identityHowToPresent: Text(
                title: "Présenter une pièce d'identité mobile",
                summary: "Le lecteur demande au téléphone les données utiles ; le client accepte sur le téléphone.",
                steps: [
                    "Tenez le téléphone ou la montre sur le symbole sans contact du lecteur.",
                    "Acceptez la demande sur le téléphone.",
                    "Gardez-le jusqu'à ce que le lecteur affiche le résultat.",
                ]
            ),
        ],
        "de": [
            .paymentHowToTap: Text(
                title: "Kontaktlos bezahlen",
                summary: "Kontaktlose Karten, Telefone und Uhren bezahlen, indem man sie an das Lesegerät hält.",
                steps: [
                    "Warten Sie, bis das Lesegerät bereit ist.",
                    "Halten Sie Karte, Telefon oder Uhr flach an das Kontaktlos-Symbol des Lesegeräts.",
                    "Halten Sie sie dort, bis das Lesegerät piept oder das Lesen bestätigt.",
                    "Geben Sie bei Aufforderung die PIN ein oder folgen Sie den Hinweisen auf dem Telefon.",
                ]
            )
        ],
    ]
}
