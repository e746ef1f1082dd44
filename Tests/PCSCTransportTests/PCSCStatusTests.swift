import ProximaCore
import Testing

@testable import PCSCTransport

@Suite("PCSCStatus: pcsc-lite status names, texts and Proxima error codes")
struct PCSCStatusTests {
    @Test("every named status carries its C name, and the names are distinct")
    func namesAreDistinct() {
        let names = PCSCStatus.namedStatuses.map(\.name)
        #expect(names.count == 60, "pcsc-lite 1.9.9 defines 61 codes; SCARD_E_UNEXPECTED shares a value")
        #expect(Set(names).count == names.count)
        #expect(Set(PCSCStatus.namedStatuses.map(\.status)).count == names.count)
        for (status, name) in PCSCStatus.namedStatuses {
            #expect(status.name == name)
            #expect(status.description.hasPrefix(name + " ("))
        }
    }

    @Test(
        "raw values are pcsc-lite's, positive on Linux where LONG is 64-bit",
        arguments: [
            (PCSCStatus.success, 0x0000_0000, "SCARD_S_SUCCESS"),
            (.internalError, 0x8010_0001, "SCARD_F_INTERNAL_ERROR"),
            (.cancelled, 0x8010_0002, "SCARD_E_CANCELLED"),
            (.unknownReader, 0x8010_0009, "SCARD_E_UNKNOWN_READER"),
            (.timeout, 0x8010_000A, "SCARD_E_TIMEOUT"),
            (.sharingViolation, 0x8010_000B, "SCARD_E_SHARING_VIOLATION"),
            (.noSmartcard, 0x8010_000C, "SCARD_E_NO_SMARTCARD"),
            (.readerUnavailable, 0x8010_0017, "SCARD_E_READER_UNAVAILABLE"),
            (.shutdown, 0x8010_0018, "SCARD_P_SHUTDOWN"),
            (.noService, 0x8010_001D, "SCARD_E_NO_SERVICE"),
            (.serviceStopped, 0x8010_001E, "SCARD_E_SERVICE_STOPPED"),
            (.unsupportedFeature, 0x8010_001F, "SCARD_E_UNSUPPORTED_FEATURE"),
            (.noReadersAvailable, 0x8010_002E, "SCARD_E_NO_READERS_AVAILABLE"),
            (.unresponsiveCard, 0x8010_0066, "SCARD_W_UNRESPONSIVE_CARD"),
            (.removedCard, 0x8010_0069, "SCARD_W_REMOVED_CARD"),
            (.cardNotAuthenticated, 0x8010_006F, "SCARD_W_CARD_NOT_AUTHENTICATED"),
        ] as [(PCSCStatus, Int, String)]
    )
    func rawValues(status: PCSCStatus, rawValue: Int, name: String) {
        #expect(status.rawValue == rawValue)
        #expect(status.name == name)
        #expect(PCSCStatus(rawValue: rawValue) == status)
    }

    @Test("SCARD_E_UNEXPECTED shares its value with SCARD_E_UNSUPPORTED_FEATURE, which names it")
    func unexpectedIsUnsupportedFeature() {
        #expect(PCSCStatus.unexpected == .unsupportedFeature)
        #expect(PCSCStatus.unexpected.name == "SCARD_E_UNSUPPORTED_FEATURE")
    }

    @Test("description: the C name, then pcsc_stringify_error's text without its period")
    func descriptions() {
        #expect(PCSCStatus.removedCard.description == "SCARD_W_REMOVED_CARD (Card was removed)")
        #expect(PCSCStatus.noService.description == "SCARD_E_NO_SERVICE (Service not available)")
        #expect(PCSCStatus.success.description == "SCARD_S_SUCCESS (Command successful)")
        #expect(PCSCStatus.success.isSuccess)
        #expect(!PCSCStatus.removedCard.isSuccess)
    }

    @Test("a value pcsc-lite does not define reads as hex, with pcsc-lite's text")
    func unknownValue() {
        let status = PCSCStatus(rawValue: 0x8010_FFFF)
        #expect(status.name == nil)
        #expect(status.description == "PC/SC status 0x8010FFFF (Unknown error: 0x8010FFFF)")
    }

    @Test(
        "mapping to Proxima error codes",
        arguments: [
            (PCSCStatus.removedCard, ProximaError.Code.cardRemoved),
            (.readerUnavailable, .readerVanished),
            (.unknownReader, .readerVanished),
            (.timeout, .cardTimeout),
            (.unresponsiveCard, .cardTimeout),
            (.sharingViolation, .readerBusy),
            (.noService, .readerUnavailable),
            (.serviceStopped, .readerUnavailable),
            (.cancelled, .cancelled),
            (.noSmartcard, .transmitFailed),
            (.resetCard, .transmitFailed),
            (.communicationError, .transmitFailed),
            (.notTransacted, .transmitFailed),
            (.insufficientBuffer, .transmitFailed),
            (PCSCStatus(rawValue: 0x8010_FFFF), .transmitFailed),
        ] as [(PCSCStatus, ProximaError.Code)]
    )
    func errorCodes(status: PCSCStatus, code: ProximaError.Code) {
        #expect(status.errorCode == code)
    }

    @Test("the Proxima error names the step, the reader and the status")
    func proximaError() {
        let error = PCSCStatus.removedCard.proximaError(
            step: "SCardTransmit",
            readerName: "Virtual PCD 00 00",
            reader: "pcsc/Virtual PCD 00 00"
        )
        #expect(error.code == .cardRemoved)
        #expect(error.reader == "pcsc/Virtual PCD 00 00")
        #expect(error.reason == "SCardTransmit on 'Virtual PCD 00 00': SCARD_W_REMOVED_CARD (Card was removed)")
    }

    @Test("the statuses that make an auto connection fall back to short APDUs")
    func extendedLengthRefusals() {
        let refusals = PCSCStatus.namedStatuses.map(\.status).filter(\.meansExtendedLengthRefused)
        #expect(
            Set(refusals) == [
                .notTransacted, .insufficientBuffer, .invalidParameter, .invalidValue, .unsupportedFeature,
            ]
        )
    }
}
