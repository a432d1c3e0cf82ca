import Contracts
import XCTest

/// The grammar of a device's locale, app version and tags.
final class DevicePropertiesTests: XCTestCase {
    func testALocaleIsALanguageAnOptionalScriptAndAnOptionalRegionInItsCanonicalForm() {
        let canonical: [(String, String)] = [
            ("pt", "pt"), ("PT", "pt"), ("pt-br", "pt-BR"), ("pt_BR", "pt-BR"), ("zh-hant-tw", "zh-Hant-TW"),
            ("ZH_HANS", "zh-Hans"), ("es-419", "es-419"), ("fil-PH", "fil-PH"), ("sr-Latn-RS", "sr-Latn-RS"),
        ]
        for (text, form) in canonical {
            XCTAssertEqual(DeviceLocale.canonical(text), form, text)
        }
        for text in ["", "p", "port", "pt-", "-BR", "pt--BR", "pt-B", "pt-BRA", "pt-12", "pt-1234", "pt-BR-x", "en-US-posix",
                     "zh-Hant-TW-x", "é", "p1", "pt BR", "pt-Latn-Latn"] {
            XCTAssertNil(DeviceLocale.canonical(text), text)
        }
        XCTAssertEqual(DeviceLocale.canonical("abc-Hant-419")?.utf8.count, DeviceLocale.maxBytes)
    }

    func testAppVersionsCompareAsNumbersPartByPart() throws {
        func v(_ text: String) throws -> AppVersion { try XCTUnwrap(AppVersion(text), text) }
        XCTAssertLessThan(try v("5.9"), try v("5.10"))
        XCTAssertLessThan(try v("4.99.99"), try v("5"))
        XCTAssertEqual(try v("5"), try v("5.0.0.0"))
        XCTAssertEqual(try v("05.01"), try v("5.1"))
        XCTAssertLessThan(try v("5.0.0.1"), try v("5.0.1"))
        XCTAssertFalse(try v("5.1") < v("5.1.0"))
        XCTAssertEqual(try v("007.010").description, "7.10")
        XCTAssertEqual(try v("999999999.999999999.999999999.999999999").description.utf8.count, AppVersion.maxBytes)
        for text in ["", ".", "5.", ".5", "5..1", "1.2.3.4.5", "v5", "5.1-beta", "1234567890", "-1", "5 .1", "٥"] {
            XCTAssertNil(AppVersion(text), text)
        }
    }

    func testATagIsUpTo64BytesOfLettersDigitsAndFourMarks() {
        for name in ["team:benfica", "plan.premium", "A_b-9", String(repeating: "t", count: DeviceTag.maxBytes)] {
            XCTAssertTrue(DeviceTag.isValid(name), name)
        }
        for name in ["", String(repeating: "t", count: DeviceTag.maxBytes + 1), "two words", "café", "a/b", "a,b", "a\u{0}"] {
            XCTAssertFalse(DeviceTag.isValid(name), name)
        }
    }

    /// A set of names: each once, in byte order, however many are given.
    func testDeviceLabelsAreASortedSetWhateverTheirCount() {
        XCTAssertEqual(DeviceLabels([]).names, [])
        XCTAssertEqual(DeviceLabels(["x"]).names, ["x"])
        XCTAssertEqual(DeviceLabels(["b", "a", "b"]).names, ["a", "b"])
        XCTAssertEqual(DeviceLabels(["b", "B", "a:1", "b"]).names, ["B", "a:1", "b"])
        XCTAssertEqual(DeviceLabels(["same", "same"]).names, ["same"])
    }
}
