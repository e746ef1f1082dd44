internal import Foundation
package import ProximaCore

/// Merchant education: how-to content a store shows its staff and customers (Apple's `ProximityReaderDiscovery`
/// topics), as structured, localizable values: a title, a summary, numbered steps and a simple picture drawn in
/// text so that any lane display (a terminal, an attendant screen, a log) can show it.
///
/// Strings live in ``strings`` per language (`en`, `fr`, `de`); a store adds languages or rewords the built-in ones
/// with a translations file (``Translations``, manifest key `capabilities.payment.education`). A language with no
/// text for a topic falls back to English: the file's, then the built-in.
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

    /// The content of `topic` in `language` (an ISO 639-1 code; region and script are ignored), from
    /// `translations` first, then the built-in strings; English when neither has that language.
    package static func content(
        _ topic: Topic,
        language: String,
        translations: Translations = Translations()
    ) -> Content {
        let code = String(language.lowercased().prefix { $0.isLetter })
        let found =
            [(code, translations.languages[code]), (code, strings[code]), ("en", translations.languages["en"])]
            .lazy.compactMap { language, table in table?[topic].map { (language, $0) } }.first
        let (language, text) =
            found ?? ("en", strings["en"]?[topic] ?? Text(title: topic.rawValue, summary: "", steps: []))
        return Content(
            id: topic.rawValue,
            topic: topic,
            language: language,
            title: text.title,
            summary: text.summary,
            steps: text.steps,
            picture: pictures[topic] ?? []
        )
    }

    /// A store's own wording: texts per language and topic, read from a JSON file the manifest names
    /// (`capabilities.payment.education`), checked strictly like the manifest (errors name the file and the JSON
    /// path):
    ///
    /// ```json
    /// { "languages": { "es": { "payment.howToTap": { "title": "Cómo pagar sin contacto",
    ///                                                  "summary": "…", "steps": ["…", "…"] } } } }
    /// ```
    ///
    /// Language codes are ISO 639-1 (two lower-case letters); topics are ``Topic`` raw values; every text has a
    /// title, a summary and 1–10 steps, each at most 500 characters.
    package struct Translations: Hashable, Sendable {
        package var languages: [String: [Topic: Text]] = [:]

        package init() {}

        /// The largest file read.
        package static let maximumFileBytes = 1 << 20

        /// Reads and checks the file at `path`.
        /// - Parameter jsonPath: the manifest key that named it, for errors.
        /// - Throws: `ProximaError.invalidManifest` naming the file and what is wrong where.
        package init(contentsOf path: String, jsonPath: String? = nil) throws {
            self = try SettingsFile.load(path, limit: Self.maximumFileBytes, jsonPath: jsonPath) { try Self(json: $0) }
        }

        /// The translations of a parsed file.
        package init(json: JSONValue) throws {
            var document = try StrictObject(json, at: "")
            let languagesJSON = try document.required("languages", expected: "an object of languages")
            var languagesObject = try StrictObject(languagesJSON, at: document.path(of: "languages"))
            for code in languagesObject.keys {
                let languagePath = languagesObject.path(of: code)
                guard code.utf8.count == 2,
                    code.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) })
                else {
                    throw ProximaError(
                        .invalidManifest,
                        "\"\(code)\" is not an ISO 639-1 language code (two lower-case letters, e.g. es)",
                        jsonPath: languagePath
                    )
                }
                guard let topicsJSON = languagesObject.value(code) else { continue }
                var topicsObject = try StrictObject(topicsJSON, at: languagePath)
                var texts: [Topic: Text] = [:]
                for name in topicsObject.keys {
                    guard let topic = Topic(rawValue: name) else {
                        let known = Topic.allCases.map(\.rawValue).joined(separator: ", ")
                        throw ProximaError(
                            .invalidManifest,
                            "unknown topic \"\(name)\" (known: \(known))",
                            jsonPath: topicsObject.path(of: name)
                        )
                    }
                    guard let textJSON = topicsObject.value(name) else { continue }
                    texts[topic] = try Self.text(textJSON, at: topicsObject.path(of: name))
                }
                try topicsObject.finish(allowing: [])
                languages[code] = texts
            }
            try languagesObject.finish(allowing: [])
            try document.finish()
        }

        private static func text(_ json: JSONValue, at path: String) throws -> Text {
            var object = try StrictObject(json, at: path)
            func checked(_ text: String, at path: String) throws -> String {
                guard text.count <= 500 else {
                    throw ProximaError(.invalidManifest, "\(text.count) characters, at most 500", jsonPath: path)
                }
                return text
            }
            let title = try checked(try object.string("title"), at: object.path(of: "title"))
            let summary = try checked(try object.string("summary"), at: object.path(of: "summary"))
            let decoder = object
            let steps = try object.array("steps") { value, elementPath in
                try checked(try decoder.decodeString(value, at: elementPath), at: elementPath)
            }
            guard (1...10).contains(steps.count) else {
                throw ProximaError(
                    .invalidManifest,
                    "\(steps.count) steps, expected 1 to 10",
                    jsonPath: object.path(of: "steps")
                )
            }
            try object.finish()
            return Text(title: title, summary: summary, steps: steps)
        }
    }

    /// The language of the process's locale (`Locale.current`), as used when none is given.
    package static var currentLanguage: String { Locale.current.language.languageCode?.identifier ?? "en" }

    /// One topic's words in one language.
    package struct Text: Hashable, Sendable {
        package var title: String
        package var summary: String
        package var steps: [String]
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
