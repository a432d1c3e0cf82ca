import Contracts
import XCTest

final class RedactedURLTests: XCTestCase {
    func testUserinfoAndQueryValuesAreRedactedAndTheRestKept() {
        XCTAssertEqual(RedactedURL.string("https://alice:s3cret@hooks.example.com:8443/pushline/status?token=abc&app=1&flag#frag"),
                       "https://redacted@hooks.example.com:8443/pushline/redacted?token=redacted&app=redacted&flag")
        XCTAssertEqual(RedactedURL.string("https://user@hooks.example.com/a"), "https://redacted@hooks.example.com/a")
        XCTAssertEqual(RedactedURL.string("http://127.0.0.1:9000/hook"), "http://127.0.0.1:9000/hook")
        XCTAssertEqual(RedactedURL.string("https://h.example/p?%74oken=%73ecret"), "https://h.example/p?%74oken=redacted")
    }

    func testPathSegmentsAfterTheFirstAreRedacted() {
        XCTAssertEqual(RedactedURL.string("https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/XXXXsecretXXXX"),
                       "https://hooks.slack.com/services/redacted/redacted/redacted")
        XCTAssertEqual(RedactedURL.string("https://discord.com/api/webhooks/123/s3cret?wait=true"),
                       "https://discord.com/api/redacted/redacted/redacted?wait=redacted")
        XCTAssertEqual(RedactedURL.string("https://h.example/hook/"), "https://h.example/hook/")
        XCTAssertEqual(RedactedURL.string("https://h.example/hook/k3y/"), "https://h.example/hook/redacted/")
        XCTAssertEqual(RedactedURL.string("https://h.example"), "https://h.example")
    }

    func testWhatIsNotAURLShowsNothingOfIt() {
        for text in ["", "no scheme secret", "://secret@"] {
            let shown = RedactedURL.string(text)
            XCTAssertFalse(shown.contains("secret") && text.contains("secret"), shown)
        }
    }
}
