import ProximaCore
import ProximaCrypto
import Testing

/// Seeded random garbage (and garbage spliced into valid input) through every parser of outside bytes: each must
/// throw its documented error or return, never trap.
@Suite struct HostileInputTests {
    private static func garbage(_ generator: inout SplitMix64, maxLength: Int) -> [UInt8] {
        let count = Int(generator.next() % UInt64(maxLength + 1))
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    @Test func keyAndSignatureParsersOnlyThrowTheirErrors() throws {
        var generator = SplitMix64(seed: 0x9180)
        let validDER = try P256.PrivateKey().publicKey.derRepresentation
        for round in 0..<400 {
            var input = Self.garbage(&generator, maxLength: 100)
            if round % 4 == 0, !input.isEmpty {
                // Keep a valid prefix so the parsers get past their first checks.
                input = Array(validDER.prefix(input.count)) + input.suffix(max(0, input.count - validDER.count))
                input[Int(generator.next() % UInt64(input.count))] ^= 0x5A
            }
            for parse in [
                { _ = try P256.PublicKey(x963Representation: [0x04] + input.prefix(64)) },
                { _ = try P256.PublicKey(compressedRepresentation: [0x02 + UInt8(round & 1)] + input.prefix(32)) },
                { _ = try P256.PublicKey(derRepresentation: input) },
                { _ = try P256.PublicKey(pemRepresentation: String(decoding: input, as: UTF8.self)) },
                { _ = try P256.PrivateKey(rawRepresentation: Array(input.prefix(32))) },
                { _ = try P256.PrivateKey(pemRepresentation: String(decoding: input, as: UTF8.self)) },
            ] as [() throws -> Void] {
                do { try parse() } catch let error as CryptoError { #expect(error.code == .invalidKey) }
            }
            do {
                _ = try P256.ECDSASignature(derRepresentation: input)
            } catch let error as ProximaError {
                #expect(error.code == .malformedData)
            }
        }
    }

    @Test func hpkeOpenOfGarbageThrows() throws {
        var generator = SplitMix64(seed: 0x5180)
        let key = try P256.PrivateKey()
        let (enc, _) = try HPKE.seal(to: key.publicKey, info: [], aad: [], plaintext: [1])
        for _ in 0..<100 {
            let ciphertext = Self.garbage(&generator, maxLength: 64)
            #expect(throws: CryptoError(.authenticationFailed)) {
                try HPKE.open(enc: enc, privateKey: key, info: [], aad: [], ciphertext: ciphertext)
            }
        }
    }

    @Test func jwtParserOnlyThrowsMalformedToken() throws {
        var generator = SplitMix64(seed: 0x7519)
        let alphabet = Array("eyJhbGciOiJFUzI1NiJ9.-_AZaz09{}\":,[]=+/ ".utf8)
        let key = try P256.PrivateKey().publicKey
        for _ in 0..<500 {
            let length = Int(generator.next() % 120)
            let token = String(
                decoding: (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] },
                as: UTF8.self
            )
            do {
                try JSONWebToken(compactSerialization: token).verifySignature(using: key)
                Issue.record("random token \(token) verified")
            } catch let error as JWTError {
                #expect([.malformedToken, .algorithmNotAllowed, .invalidSignature].contains(error.code))
            }
        }
    }
}
