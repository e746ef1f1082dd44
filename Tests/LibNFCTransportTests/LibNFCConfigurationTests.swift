import LibNFCTransport
import ProximaCore
import Testing

@Suite struct LibNFCConfigurationTests {
    func parse(_ text: String) throws -> LibNFCConfiguration {
        try LibNFCConfiguration(json: try JSONValue.parse(Array(text.utf8)), path: "plugins[0].config")
    }

    @Test("defaults: scan, both modulations, 100 ms polls, 2 s per APDU")
    func defaults() throws {
        let configuration = try parse("{}")
        #expect(configuration.devices.isEmpty)
        #expect(configuration.modulations == [.iso14443A, .iso14443B])
        #expect(configuration.pollPeriod == .milliseconds(100))
        #expect(configuration.apduTimeout == .seconds(2))
        #expect(configuration.readerIDPrefix == nil)
        let transport = LibNFCTransport(id: "nfc", configuration: configuration)
        #expect(transport.declaredReaders == nil)
    }

    @Test("configured devices are declared readers with ids from the prefix and the connstring")
    func declaredReaders() throws {
        let configuration = try parse(
            #"{ "devices": ["pn532_uart:/dev/ttyS0", "pn53x_usb:002:005"], "readerIDPrefix": "lane/", "pollPeriodMs": 50 }"#
        )
        let transport = LibNFCTransport(id: "nfc", configuration: configuration)
        #expect(transport.declaredReaders?.map(\.id) == ["lane/pn532_uart:/dev/ttyS0", "lane/pn53x_usb:002:005"])
        #expect(transport.declaredReaders?.allSatisfy { !$0.supportsExtendedLength } == true)
        #expect(configuration.pollPeriod == .milliseconds(50))
    }

    @Test(
        "bad members are invalidManifest errors naming the JSON path",
        arguments: [
            (#"{ "devices": [] }"#, "plugins[0].config.devices"),
            (#"{ "devices": ["/dev/ttyS0"] }"#, "plugins[0].config.devices[0]"),
            (#"{ "devices": ["pn532_uart:/dev/ttyS0", "pn532_uart:/dev/ttyS0"] }"#, "plugins[0].config.devices"),
            (#"{ "modulations": ["felica"] }"#, "plugins[0].config.modulations[0]"),
            (#"{ "pollPeriodMs": 5 }"#, "plugins[0].config.pollPeriodMs"),
            (#"{ "apduTimeoutMs": 0 }"#, "plugins[0].config.apduTimeoutMs"),
            (#"{ "speed": 115200 }"#, "plugins[0].config.speed"),
        ]
    )
    func badMembers(text: String, path: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch let error as ProximaError {
            #expect(error.code == .invalidManifest)
            #expect(error.pathAndReason.contains(path), "\(error.pathAndReason)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("libnfc statuses read as their C names and map to kernel codes")
    func statuses() {
        #expect(LibNFCStatus.rfTransmission.description == "NFC_ERFTRANS (RF Transmission Error)")
        #expect(LibNFCStatus(rawValue: -1) == .inputOutput)
        #expect(LibNFCStatus(rawValue: -77).description == "libnfc error -77")
        #expect(LibNFCStatus.targetReleased.errorCode == .cardRemoved)
        #expect(LibNFCStatus.inputOutput.meansLinkFailure)
        #expect(!LibNFCStatus.rfTransmission.meansLinkFailure)
    }
}
