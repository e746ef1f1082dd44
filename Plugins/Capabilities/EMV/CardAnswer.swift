package import ProximaCore

/// Card-answer parsing: each failure names the step, as `PaymentError.cardReadFailed`.
package enum CardAnswer {
    /// Decodes BER-TLV from a card answer, turning a decoding error into `cardReadFailed` at `step`.
    package static func decodeAll(_ bytes: [UInt8], step: String) throws -> [TLV] {
        do {
            return try TLV.decodeAll(bytes, maximumDepth: 8, maximumSize: 4096)
        } catch let error as ProximaError {
            throw PaymentError(.cardReadFailed, step: step, error.reason)
        }
    }

    /// Decodes exactly one template with one of `tags` from a card answer (padding around it allowed).
    package static func template(_ bytes: [UInt8], step: String, expecting tags: [TLVTag], what: String) throws -> TLV {
        let objects = try decodeAll(bytes, step: step)
        guard let first = objects.first else {
            throw PaymentError(.cardReadFailed, step: step, "\(what) is empty (\(bytes.count) bytes of padding)")
        }
        guard tags.contains(first.tag) else {
            let expected = tags.map(\.description).joined(separator: " or ")
            throw PaymentError(
                .cardReadFailed,
                step: step,
                "\(what): template \(expected) expected, found \(first.tag)"
            )
        }
        guard objects.count == 1 else {
            throw PaymentError(
                .cardReadFailed,
                step: step,
                "\(what): \(objects.count - 1) data objects follow the \(first.tag) template"
            )
        }
        return first
    }

    package static func failure(_ step: String, _ reason: String) -> PaymentError {
        PaymentError(.cardReadFailed, step: step, reason)
    }
}
