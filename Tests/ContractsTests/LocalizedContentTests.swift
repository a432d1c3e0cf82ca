import Contracts
import XCTest

/// Localized content (docs/API.md#localized-content): which variant a device's locale gets, and
/// what content that variant is.
final class LocalizedContentTests: XCTestCase {
    private let content = NotificationContent(
        title: "Goal", body: "1-0", text: "Goal! 1-0",
        localized: ["pt": LocalizedText(title: "Golo"), "pt-BR": LocalizedText(title: "Gol", body: "1 a 0"),
                    "zh-TW": LocalizedText(body: "進球"), "zh-Hans": LocalizedText(body: "进球"), "es": LocalizedText(text: "¡Gol!")])

    func testADeviceGetsItsLanguageAndRegionThenItsLanguageThenTheDefault() {
        let cases: [(String?, String?)] = [
            ("pt-BR", "pt-BR"), ("pt-PT", "pt"), ("pt", "pt"), ("es-419", "es"), ("zh-Hant-TW", "zh-TW"), ("zh-Hans-CN", "zh-Hans"),
            ("zh", nil), ("en-US", nil), ("fr", nil), (nil, nil),
        ]
        for (locale, variant) in cases {
            XCTAssertEqual(content.variant(for: locale), variant, locale ?? "no locale")
        }
        XCTAssertNil(NotificationContent(title: "t").variant(for: "pt-BR"), "a send without localized text has one variant")
    }

    func testAVariantsTextReplacesTheDefaultsAndWhatItLeavesOutIsTheDefaults() {
        let brazil = content.localized("pt-BR")
        XCTAssertEqual([brazil.title, brazil.body, brazil.text], ["Gol", "1 a 0", "1 a 0"],
                       "the default's alert text is in another language: the variant's body stands in")
        XCTAssertNil(brazil.localized)
        let portugal = content.localized("pt")
        XCTAssertEqual([portugal.title, portugal.body, portugal.text], ["Golo", "1-0", "Golo"])
        let spain = content.localized("es")
        XCTAssertEqual([spain.title, spain.body, spain.text], ["Goal", "1-0", "¡Gol!"])
        let fallback = content.localized(nil)
        XCTAssertEqual([fallback.title, fallback.body, fallback.text], ["Goal", "1-0", "Goal! 1-0"])
        XCTAssertNil(fallback.localized)
        XCTAssertEqual(NotificationContent(title: "t", localized: ["pt": LocalizedText(body: "b")]).localized("pt").text, nil,
                       "no alert text of its own in the default: none in the variant")
    }
}
