import CCIDTransport
import ProximaCore
import Testing

@Suite struct CCIDConfigurationTests {
    func parse(_ text: String) throws -> CCIDConfiguration {
        try CCIDConfiguration(json: try JSONValue.parse(Array(text.utf8)), path: "plugins[0].config")
    }

    @Test("VID:PID pairs, poll period and transfer timeout are read; defaults otherwise")
    func members() throws {
        let configuration = try parse(#"{ "devices": ["072f:223B"], "pollPeriodMs": 50 }"#)
        #expect(configuration.devices == [CCIDConfiguration.DeviceID(vendor: 0x072F, product: 0x223B)])
        #expect(configuration.devices.first?.description == "072f:223b")
        #expect(configuration.pollPeriod == .milliseconds(50))
        #expect(configuration.transferTimeout == .seconds(5))
        #expect(try parse("{}").devices.isEmpty)
    }

    @Test(
        "bad members are invalidManifest errors naming the JSON path",
        arguments: [
            (#"{ "devices": [] }"#, "plugins[0].config.devices"),
            (#"{ "devices": ["72f:2200"] }"#, "plugins[0].config.devices[0]"),
            (#"{ "devices": ["072f-2200"] }"#, "plugins[0].config.devices[0]"),
            (#"{ "transferTimeoutMs": 1 }"#, "plugins[0].config.transferTimeoutMs"),
            (#"{ "slots": 2 }"#, "plugins[0].config.slots"),
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

    @Test("libusb statuses read as their C names; a busy interface is readerBusy")
    func statuses() {
        #expect(LibUSBStatus.busy.description.hasPrefix("LIBUSB_ERROR_BUSY"))
        #expect(LibUSBStatus.busy.errorCode == .readerBusy)
        #expect(LibUSBStatus.noDevice.errorCode == .readerVanished)
        #expect(LibUSBStatus(rawValue: -7) == .timeout)
    }
}
