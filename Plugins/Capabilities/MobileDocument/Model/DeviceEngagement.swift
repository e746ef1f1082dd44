import ProximaCore
import ProximaCrypto

/// The holder's DeviceEngagement (ISO/IEC 18013-5 §8.2.1.1): its version, ephemeral device key and the bytes
/// exactly as received, which the SessionTranscript embeds.
///
/// `DeviceEngagement = {0: tstr version, 1: Security, ? 2: DeviceRetrievalMethods, …}`,
/// `Security = [1 (cipher suite), EDeviceKeyBytes]`, `EDeviceKeyBytes = #6.24(bstr .cbor COSE_Key)`.
package struct DeviceEngagement: Sendable, Hashable {
    /// The encoding as received (the content of DeviceEngagementBytes).
    package let encoded: [UInt8]
    /// The version string, `1.x`.
    package let version: String
    /// The holder's ephemeral key, on the curve the reader's ephemeral key must use.
    package let deviceKey: ECPublicKey
    /// The content of EDeviceKeyBytes as received.
    package let deviceKeyBytes: [UInt8]
    /// The retrieval methods' types (1 NFC, 2 BLE, 3 Wi-Fi Aware), when the engagement lists any.
    package let retrievalMethodTypes: [Int]

    /// The bound on the engagement's size: Annex D's is 116 bytes; a handover record is at most a few hundred.
    static let maximumSize = 4096

    /// Parses a DeviceEngagement.
    /// - Throws: ``MobileDocumentError`` `.malformedEngagement` for bytes that are not one, and
    ///   `.unsupportedEngagement` for a version other than 1.x or a cipher suite other than 1.
    package init(encoded: [UInt8]) throws {
        guard encoded.count <= Self.maximumSize else {
            throw MobileDocumentError(.malformedEngagement, "DeviceEngagement of \(encoded.count) bytes")
        }
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(encoded, limits: CBORDecoder.Limits(maximumDepth: 16))
        } catch {
            throw MobileDocumentError.decoding(.malformedEngagement, "DeviceEngagement", error)
        }
        guard let version = value[0]?.textValue else {
            throw MobileDocumentError(.malformedEngagement, "DeviceEngagement has no version (key 0)")
        }
        guard version.hasPrefix("1.") else {
            throw MobileDocumentError(.unsupportedEngagement, "DeviceEngagement version \(version) is not 1.x")
        }
        guard let security = value[1]?.arrayValue, security.count >= 2 else {
            throw MobileDocumentError(.malformedEngagement, "DeviceEngagement has no Security array (key 1)")
        }
        guard security[0].intValue == 1 else {
            throw MobileDocumentError(.unsupportedEngagement, "DeviceEngagement cipher suite is not 1")
        }
        guard let keyBytes = security[1].embeddedBytes else {
            throw MobileDocumentError(.malformedEngagement, "EDeviceKeyBytes is not #6.24(bstr)")
        }
        do {
            deviceKey = try COSEKey.publicKey(from: try CBORDecoder.decode(keyBytes))
        } catch {
            throw MobileDocumentError(
                .unsupportedEngagement,
                "EDeviceKey is not a usable EC2 COSE_Key",
                underlying: error
            )
        }
        self.encoded = encoded
        self.version = version
        self.deviceKeyBytes = keyBytes
        retrievalMethodTypes = (value[2]?.arrayValue ?? []).compactMap { $0.arrayValue?.first?.intValue }
    }
}
