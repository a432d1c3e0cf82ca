import Contracts
import XCTest

/// The rule an app's webhook host list is judged by, in ingest and in the processor alike.
final class WebhookHostsTests: XCTestCase {
    func testEntriesAreNormalizedAndWhatIsNoHostIsRefused() {
        XCTAssertEqual(WebhookHosts.normalized(" Hooks.Example.COM. "), "hooks.example.com")
        XCTAssertEqual(WebhookHosts.normalized("*.Example.net"), "*.example.net")
        XCTAssertEqual(WebhookHosts.normalized("203.0.113.7"), "203.0.113.7")
        XCTAssertEqual(WebhookHosts.normalized("[2001:DB8::1]"), "2001:db8::1")
        for bad in ["", "*", "*.", "a..b", "-a.example", "a-.example", "hooks.example.com/path", "user@host", "a b", "*.*.example",
                    "host:8080", String(repeating: "a", count: 64) + ".example", String(repeating: "a.", count: 127) + "example"] {
            XCTAssertNil(WebhookHosts.normalized(bad), bad)
        }
    }

    func testAURLIsAllowedOnlyWhenItsHostIsListedOrUnderAListedWildcard() {
        let hosts = ["hooks.example.com", "*.example.net", "203.0.113.7", "2001:db8::1"]
        for allowed in ["https://hooks.example.com/status", "http://HOOKS.example.com:8080/x?y=1", "https://a.example.net/",
                        "https://a.b.example.net/x", "http://203.0.113.7/h", "http://[2001:db8::1]:9000/h"] {
            XCTAssertTrue(WebhookHosts.allows(allowed, hosts: hosts), allowed)
        }
        for refused in ["https://example.net/", "https://evil.test/", "https://hooks.example.com.evil.test/",
                        "https://evilexample.net/", "https://hooks.example.com@evil.test/", "http://203.0.113.8/",
                        "not a url"] {
            XCTAssertFalse(WebhookHosts.allows(refused, hosts: hosts), refused)
        }
        XCTAssertTrue(WebhookHosts.allows("https://anything.test/", hosts: nil), "no list: open")
        XCTAssertFalse(WebhookHosts.allows("https://anything.test/", hosts: []), "an empty list allows nothing")
    }
}
