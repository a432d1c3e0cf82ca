import Contracts
import XCTest

/// `BWDeviceAPI.userId(phone:email:)`: the Pushline user id of a BW user (docs/API.md#bw-user-ids).
final class BWUserIdTests: XCTestCase {
    func testPhonesBecomeE164TelIds() throws {
        let cases: [(String, String)] = [
            ("+19883999901", "tel:+19883999901"),
            ("+1 (988) 399-9901", "tel:+19883999901"),
            ("0044 20 7946 0958", "tel:+442079460958"),
            ("+44.20.7946.0958", "tel:+442079460958"),
            ("+351 912-345-678", "tel:+351912345678"),
            ("+123456", "tel:+123456"),                      // 6 digits, the shortest
            ("+123456789012345", "tel:+123456789012345"),    // 15 digits, the longest
        ]
        for (phone, expected) in cases {
            XCTAssertEqual(try BWDeviceAPI.userId(phone: phone, email: nil), expected, phone)
        }
    }

    func testInvalidPhonesAreRefusedNamingUserPhone() {
        let bad = ["19883999901", "+12345", "+1234567890123456", "+0123456789", "0019883999901x", "+1 988 CALL", "+1/988/399",
                   "++19883999901", "00", "+", "(+1) 988 399 9901 ext 2", "+１９８８３９９９９０１"]
        for phone in bad {
            XCTAssertThrowsError(try BWDeviceAPI.userId(phone: phone, email: "abc@yahoo.com"), phone) { error in
                XCTAssertEqual(error as? BWDeviceAPI.UserIdError, .invalidPhone, phone)
                XCTAssertEqual((error as? BWDeviceAPI.UserIdError)?.field, "user.phone")
            }
        }
    }

    func testEmailsAreTrimmedAndCaseFolded() throws {
        XCTAssertEqual(try BWDeviceAPI.userId(phone: nil, email: "abc@yahoo.com"), "mailto:abc@yahoo.com")
        XCTAssertEqual(try BWDeviceAPI.userId(phone: nil, email: " ABC@Yahoo.Com\n"), "mailto:abc@yahoo.com")
        XCTAssertEqual(try BWDeviceAPI.userId(phone: "", email: "First.Last+tag@Mail.Example.ORG"),
                       "mailto:first.last+tag@mail.example.org")
    }

    func testInvalidEmailsAreRefusedNamingUserEmail() {
        let long = String(repeating: "a", count: 250) + "@b.co"
        for email in ["abc", "abc@", "@yahoo.com", "abc@yahoo", "a@b@c.com", "ab c@yahoo.com", "abc@.com", "abc@yahoo.", long] {
            XCTAssertThrowsError(try BWDeviceAPI.userId(phone: nil, email: email), email) { error in
                XCTAssertEqual(error as? BWDeviceAPI.UserIdError, .invalidEmail, email)
                XCTAssertEqual((error as? BWDeviceAPI.UserIdError)?.field, "user.email")
            }
        }
    }

    func testPhoneWinsOverEmail() throws {
        XCTAssertEqual(try BWDeviceAPI.userId(phone: "+19883999901", email: "abc@yahoo.com"), "tel:+19883999901")
        // A blank phone is no phone.
        XCTAssertEqual(try BWDeviceAPI.userId(phone: "  ", email: "abc@yahoo.com"), "mailto:abc@yahoo.com")
    }

    func testNeitherIsRefusedNamingUser() {
        for (phone, email) in [(nil, nil), ("", ""), (" ", nil)] as [(String?, String?)] {
            XCTAssertThrowsError(try BWDeviceAPI.userId(phone: phone, email: email)) { error in
                XCTAssertEqual(error as? BWDeviceAPI.UserIdError, .missing)
                XCTAssertEqual((error as? BWDeviceAPI.UserIdError)?.field, "user")
            }
        }
    }
}
