import Contracts
import Foundation
import Hummingbird
import WireCodec

/// The field rules shared by every dialect; each failure is a 400 naming the field.
enum FieldRules {
    /// Quiet hours (`QuietHours`) in canonical form; `""` (they are removed) and nil (left as
    /// they are) as they are.
    static func quietHours(_ text: String?) throws -> String? {
        guard let text, !text.isEmpty else { return text }
        guard let parsed = QuietHours(text) else {
            throw IngestError.badRequest("quietHours must be HH:MM-HH:MM, such as 22:00-08:00, with a start other than its end",
                                         field: "quietHours")
        }
        return parsed.description
    }

    /// The page size of a listing route: the `limit` query parameter, 1…1000, 100 when absent.
    static func pageLimit(_ text: String?) throws -> Int {
        guard let text else { return 100 }
        guard let value = Int(text), (1...1000).contains(value) else {
            throw IngestError.badRequest("limit must be an integer from 1 to 1000", field: "limit")
        }
        return value
    }

    /// A present, non-empty string.
    /// (`field` is only rendered on failure: batch elements name themselves `[3].UserId`.)
    static func required(_ value: String?, field: @autoclosure () -> String) throws -> String {
        guard let value, !value.isEmpty else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) is required", field: field, code: .fieldMissing)
        }
        return value
    }

    /// A present, non-empty string of at most `maxBytes` UTF-8 bytes (`FieldLimits`).
    static func required(_ value: String?, maxBytes: Int, field: @autoclosure () -> String) throws -> String {
        let text = try required(value, field: field())
        try bounded(text, maxBytes: maxBytes, field: field())
        return text
    }

    /// An IANA time zone name, by its form: ASCII letters, digits, `_`, `+` and `-`, in parts joined
    /// by `/`, the first starting with a letter (`Europe/Lisbon`, `Etc/GMT+3`, `UTC`), at most
    /// `FieldLimits.timeZoneBytes`. Checked by form, not against a time zone database, so a zone
    /// created after this build is accepted too.
    static func timeZone(_ value: String, field: @autoclosure () -> String) throws -> String {
        try bounded(value, maxBytes: FieldLimits.timeZoneBytes, field: field())
        let parts = value.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        let wellFormed = parts.allSatisfy { part in
            !part.isEmpty && part.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "_"), UInt8(ascii: "+"), UInt8(ascii: "-"): true
                default: false
                }
            }
        } && value.utf8.first.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) } == true
        guard wellFormed else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) must be an IANA time zone name, such as Europe/Lisbon", field: field)
        }
        return value
    }

    /// A locale in its canonical form (`DeviceLocale`): `pt_br` is `pt-BR`.
    static func locale(_ value: String, field: @autoclosure () -> String) throws -> String {
        guard value.utf8.count <= 35, let canonical = DeviceLocale.canonical(value) else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) must be a BCP 47 locale: a language, an optional script and an "
                                         + "optional region, such as pt-BR or zh-Hant-TW", field: field)
        }
        return canonical
    }

    /// An app version (`AppVersion`), as its numbers without leading zeros.
    static func appVersion(_ value: String, field: @autoclosure () -> String) throws -> String {
        guard value.utf8.count <= 64, let version = AppVersion(value) else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) must be 1 to 4 numbers joined by dots, such as 5.2.1", field: field)
        }
        return version.description
    }

    /// Tag or topic names (`DeviceTag`, `DeviceTopic`: the same grammar), each once, at most `max`;
    /// nil for none (absent or empty).
    static func names(_ values: [String]?, max: Int, field: @autoclosure () -> String) throws -> [String]? {
        guard let values, !values.isEmpty else { return nil }
        guard values.count <= max else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) has \(values.count) names; at most \(max) are allowed", field: field)
        }
        for (index, name) in values.enumerated() where !DeviceTag.isValid(name) {
            throw IngestError.badRequest("a name has 1 to \(DeviceTag.maxBytes) bytes of letters, digits, _ - . and :", field: "\(field())[\(index)]")
        }
        return DeviceLabels(values).names
    }

    /// At most `maxBytes` UTF-8 bytes (`FieldLimits`).
    static func bounded(_ value: String, maxBytes: Int, field: @autoclosure () -> String) throws {
        guard value.utf8.count <= maxBytes else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) has at most \(maxBytes) bytes", field: field)
        }
    }

    /// A present UUID in its canonical text form.
    static func uuid(_ value: String?, field: @autoclosure () -> String) throws -> UUID {
        let text = try required(value, field: field())
        guard let id = UUID(parsing: text) else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) must be a UUID", field: field)
        }
        return id
    }

    /// A path parameter that must be a UUID.
    static func uuidParameter(_ name: String, in context: IngestRequestContext) throws -> UUID {
        guard let id = context.parameters.get(name).flatMap({ UUID(parsing: String($0)) }) else {
            throw IngestError.badRequest("\(name) in the path must be a UUID", field: name)
        }
        return id
    }

    /// An absolute `http`/`https` URL with a host, as given (the signature is computed over
    /// exactly these bytes). Characters a URL may not contain are refused rather than escaped.
    static func callbackURL(_ text: String, field: String) throws -> String {
        let hasForbiddenByte = text.utf8.contains { $0 <= 0x20 || $0 == 0x7F }
        guard !hasForbiddenByte, text.utf8.count <= FieldLimits.urlBytes,
              let url = URL(string: text),
              let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else {
            throw IngestError.badRequest("must be an absolute http(s) URL with a host, of at most \(FieldLimits.urlBytes) bytes",
                                         field: field)
        }
        return text
    }

    /// Headers a webhook will be sent with: valid HTTP field names and values (no CR/LF), so a
    /// client cannot smuggle extra header lines into the processor's request; none that decide
    /// how the request is framed or routed (`WebhookHeaders.isReserved`); bounded in number and
    /// size (`FieldLimits`).
    static func headerMap(_ headers: [String: String], field: String) throws {
        guard headers.count <= FieldLimits.callbackHeaderCount else {
            throw IngestError.badRequest("at most \(FieldLimits.callbackHeaderCount) headers", field: field)
        }
        for (name, value) in headers {
            guard HeaderField.Name(name) != nil, HeaderField.isValidValue(value) else {
                throw IngestError.badRequest("must be a JSON object of HTTP header names to header values", field: field)
            }
            guard name.utf8.count <= FieldLimits.callbackHeaderNameBytes, value.utf8.count <= FieldLimits.callbackHeaderValueBytes else {
                throw IngestError.badRequest("header names have at most \(FieldLimits.callbackHeaderNameBytes) bytes and values at most "
                                             + "\(FieldLimits.callbackHeaderValueBytes)", field: field)
            }
            guard !WebhookHeaders.isReserved(name) else {
                throw IngestError.badRequest("the header \(name) cannot be set: the HTTP client decides it", field: field)
            }
        }
    }

    /// A present, non-empty device token of at most `DeviceRegistrationAPI.maxDeviceTokenBytes`.
    static func deviceToken(_ value: String?, field: @autoclosure () -> String) throws -> String {
        let token = try required(value, field: field())
        guard token.utf8.count <= DeviceRegistrationAPI.maxDeviceTokenBytes else {
            throw IngestError.badRequest("a device token has at most \(DeviceRegistrationAPI.maxDeviceTokenBytes) bytes", field: field())
        }
        return token
    }

    /// A device token in its platform's format (`DeviceTokenFormat`), for the routes that take a
    /// token together with its platform and can refuse a malformed one synchronously.
    static func deviceToken(_ token: String, platform: Platform, field: String) throws {
        guard DeviceTokenFormat.isValid(token, platform: platform) else {
            let expected = switch platform {
            case .ios: "a valid APNs device token (64…200 hex characters)"
            case .android: "a valid FCM registration token (100…4096 characters of A-Z a-z 0-9 _ : -)"
            }
            throw IngestError.badRequest("\(field) is not \(expected)", field: field)
        }
    }

    /// The BW and KF5 device `type`: `IOS` or `ANDROID`, case-insensitive.
    static func platform(_ type: String, field: String) throws -> Platform {
        switch type.trimmingCharacters(in: .whitespaces).uppercased() {
        case "IOS": return .ios
        case "ANDROID": return .android
        default: throw IngestError.badRequest("\(field) must be IOS or ANDROID", field: field)
        }
    }

    private static func lastComponent(of field: String) -> Substring {
        field.split(separator: ".").last ?? Substring(field)
    }
}
