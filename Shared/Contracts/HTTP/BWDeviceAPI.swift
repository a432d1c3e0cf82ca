import Foundation
import WireCodec

/// Wire shapes of the BW-style device service (docs/API.md#bw-device-service), mounted per app
/// under `/bwmi/v1/apps/{mobileAppId}` and authenticated with `Authorization: Bearer <api token>`.
/// Fields are optional here so that ingest can name the missing one in its 400.
public enum BWDeviceAPI {
    /// `PUT /devices` and `DELETE /devices`.
    public struct Device: Codable, Sendable, Equatable {
        /// The APNs device token or FCM registration id.
        public var deviceId: String?
        /// `IOS` or `ANDROID` (case-insensitive); required to register, ignored on delete.
        public var type: String?
        public var user: User?
        /// Pushline's own, optional, on `PUT` (docs/API.md#device-properties): the device's locale,
        /// time zone and app version, tags to add and topics to subscribe to.
        public var locale: String?
        public var timeZone: String?
        public var appVersion: String?
        public var tags: [String]?
        public var topics: [String]?

        public init(deviceId: String?, type: String?, user: User?, locale: String? = nil, timeZone: String? = nil,
                    appVersion: String? = nil, tags: [String]? = nil, topics: [String]? = nil) {
            self.deviceId = deviceId
            self.type = type
            self.user = user
            self.locale = locale
            self.timeZone = timeZone
            self.appVersion = appVersion
            self.tags = tags
            self.topics = topics
        }
    }

    /// The BW user: a phone number and/or an e-mail address.
    public struct User: Codable, Sendable, Equatable {
        public var phone: String?
        public var email: String?

        public init(phone: String? = nil, email: String? = nil) {
            self.phone = phone
            self.email = email
        }
    }

    /// `PUT /acks`: the device `did` saw the managed notification `nid`.
    public struct Ack: Codable, Sendable, Equatable {
        public var nid: String?
        public var did: String?
        public var bid: String?

        public init(nid: String?, did: String?, bid: String? = nil) {
            self.nid = nid
            self.did = did
            self.bid = bid
        }
    }

    /// `GET /devices/{deviceToken}/notifications`: `[nid, sentAt epoch millis, alert text, bid?]`
    /// per pending notification, oldest first; the inner array has 3 elements when there is no bid.
    public struct PendingList: Codable, Sendable, Equatable {
        public var ns: [[String]]

        public init(ns: [[String]]) { self.ns = ns }
    }

    /// Why no Pushline user id could be made of a BW user; `field` names the request field.
    public enum UserIdError: Error, Sendable, Equatable {
        /// Neither a phone nor an e-mail address was given.
        case missing
        case invalidPhone
        case invalidEmail

        public var field: String {
            switch self {
            case .missing: "user"
            case .invalidPhone: "user.phone"
            case .invalidEmail: "user.email"
            }
        }

        public var message: String {
            switch self {
            case .missing: "user needs a phone or an email"
            case .invalidPhone: "phone must be an international number: + (or 00) and 6…15 digits, the first not 0"
            case .invalidEmail: "email must be an e-mail address (local@domain.tld)"
            }
        }
    }

    /// The Pushline user id of a BW user (docs/API.md#bw-user-ids): `tel:<E.164>` when a phone is
    /// given (it wins over the e-mail, so the same person registered from two devices is one user),
    /// else `mailto:<e-mail, lower-cased>`. An empty or blank field counts as not given; a given
    /// but invalid phone is an error rather than a silent fall-back to the e-mail.
    public static func userId(phone: String?, email: String?) throws(UserIdError) -> String {
        if let phone, !phone.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            guard let e164 = e164(phone) else { throw .invalidPhone }
            return "tel:" + e164
        }
        if let email, !email.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            guard let address = normalizedEmail(email) else { throw .invalidEmail }
            return "mailto:" + address
        }
        throw .missing
    }

    /// A phone number as E.164 (`+` and 6…15 digits, the first not 0), or nil.
    /// Spaces, `-`, `.`, `(` and `)` are dropped and a leading international `00` becomes `+`;
    /// `+1 (988) 399-9901` → `+19883999901`, `0044 20 7946 0958` → `+442079460958`.
    public static func e164(_ phone: String) -> String? {
        var digits = Array(phone.filter { !" -.()".contains($0) })
        if digits.starts(with: ["0", "0"]) {
            digits.replaceSubrange(0..<2, with: ["+"])
        }
        guard digits.first == "+" else { return nil }
        let number = digits.dropFirst()
        guard (6...15).contains(number.count), number.first != "0",
              number.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return String(digits)
    }

    /// A trimmed, lower-cased e-mail address, or nil when it is not one: exactly one `@`, a
    /// non-empty local part, a domain with a `.` inside it, no white space, at most 254 bytes.
    public static func normalizedEmail(_ email: String) -> String? {
        let trimmed = email.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count <= 254, !trimmed.contains(where: \.isWhitespace) else { return nil }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return nil }
        let domain = parts[1]
        guard domain.contains("."), domain.first != ".", domain.last != "." else { return nil }
        return trimmed.lowercased()
    }
}

extension BWDeviceAPI.Device: WireDecodable {
    private enum Key: String, CaseIterable { case deviceId, type, user, locale, timeZone, appVersion, tags, topics }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var deviceId: String?, type: String?, user: BWDeviceAPI.User?
        var locale: String?, timeZone: String?, appVersion: String?, tags: [String]?, topics: [String]?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .deviceId: reader.readOptional(&deviceId)
            case .type: reader.readOptional(&type)
            case .user: reader.readOptional(&user)
            case .locale: reader.readOptional(&locale)
            case .timeZone: reader.readOptional(&timeZone)
            case .appVersion: reader.readOptional(&appVersion)
            case .tags: reader.readOptional(&tags)
            case .topics: reader.readOptional(&topics)
            }
        }) else { return nil }
        self.init(deviceId: deviceId, type: type, user: user, locale: locale, timeZone: timeZone, appVersion: appVersion, tags: tags,
                  topics: topics)
    }
}

extension BWDeviceAPI.User: WireDecodable {
    private enum Key: String, CaseIterable { case phone, email }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var phone: String?, email: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .phone: reader.readOptional(&phone)
            case .email: reader.readOptional(&email)
            }
        }) else { return nil }
        self.init(phone: phone, email: email)
    }
}

extension BWDeviceAPI.Ack: WireDecodable {
    private enum Key: String, CaseIterable { case nid, did, bid }
    private static let keys = WireKeys<Key>()

    public init?(wire reader: inout WireReader) {
        var nid: String?, did: String?, bid: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .nid: reader.readOptional(&nid)
            case .did: reader.readOptional(&did)
            case .bid: reader.readOptional(&bid)
            }
        }) else { return nil }
        self.init(nid: nid, did: did, bid: bid)
    }
}
