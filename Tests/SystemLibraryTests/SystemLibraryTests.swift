import CLibUSB
import CNFC
import COpenSSL
import CPCSCLite
import CSQLite
import Testing

/// Each system-library target links and answers its version call: the `-dev` packages and modulemaps are right.
@Suite struct SystemLibraryTests {
    @Test func openSSLIsVersion3() {
        #expect(OpenSSL_version_num() >> 28 == 3)
    }

    @Test func sqliteIsVersion3() {
        #expect(sqlite3_libversion_number() / 1_000_000 == 3)
    }

    @Test func libusbAnswersItsVersion() throws {
        let version = try #require(libusb_get_version())
        #expect(version.pointee.major == 1)
    }

    @Test func libnfcAnswersItsVersion() throws {
        let version = String(cString: nfc_version())
        #expect(version.hasPrefix("1."))
    }

    @Test func pcscLiteStringifiesStatus() throws {
        let text = String(cString: pcsc_stringify_error(SCARD_E_NO_SERVICE))
        #expect(text.contains("Service not available"))
    }
}
