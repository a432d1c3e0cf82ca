import Foundation

/// Hand-written reading of the request bodies of the high-volume client routes: registrations
/// and cleanups (one, or a batch), BW devices and acks. `JSONDecoder` took 15% of ingest's CPU on
/// the batch route (docs/BENCHMARKS.md, "Ingest").
///
/// A value it returns is exactly what `WireJSON.decoder()` decodes from the same bytes. It
/// returns nil for other types and whenever it is not certain (escapes, unknown or repeated keys,
/// values of another JSON type, malformed JSON…): the caller then decodes with `JSONDecoder`,
/// which decides, and which words the error a client sees.
public enum FastRequestBody {
    public static func decode<T>(_: T.Type, from bytes: UnsafeRawBufferPointer) -> T? {
        var reader = WireReader(bytes.assumingMemoryBound(to: UInt8.self))
        let value: Any? = switch T.self {
        case is DeviceRegistrationAPI.Registration.Type: DeviceRegistrationAPI.Registration(wire: &reader)
        case is [DeviceRegistrationAPI.Registration].Type: [DeviceRegistrationAPI.Registration](wire: &reader)
        case is DeviceRegistrationAPI.Cleanup.Type: DeviceRegistrationAPI.Cleanup(wire: &reader)
        case is [DeviceRegistrationAPI.Cleanup].Type: [DeviceRegistrationAPI.Cleanup](wire: &reader)
        case is BWDeviceAPI.Device.Type: BWDeviceAPI.Device(wire: &reader)
        case is BWDeviceAPI.Ack.Type: BWDeviceAPI.Ack(wire: &reader)
        default: nil
        }
        guard let value = value as? T, reader.atEnd() else { return nil }
        return value
    }
}

extension DeviceRegistrationAPI.Registration: WireDecodable {
    private enum Key: String, CaseIterable { case MobileAppId, UserId, ApiToken, ApnsDeviceToken, FcmDeviceToken }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var mobileAppId: String?, userId: String?, apiToken: String?, apns: String?, fcm: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .MobileAppId: reader.readOptional(&mobileAppId)
            case .UserId: reader.readOptional(&userId)
            case .ApiToken: reader.readOptional(&apiToken)
            case .ApnsDeviceToken: reader.readOptional(&apns)
            case .FcmDeviceToken: reader.readOptional(&fcm)
            }
        }) else { return nil }
        self.init(MobileAppId: mobileAppId, UserId: userId, ApiToken: apiToken, ApnsDeviceToken: apns, FcmDeviceToken: fcm)
    }
}

extension DeviceRegistrationAPI.Cleanup: WireDecodable {
    private enum Key: String, CaseIterable { case MobileAppId, ApiToken, UserId, DeviceToken }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var mobileAppId: String?, apiToken: String?, userId: String?, deviceToken: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .MobileAppId: reader.readOptional(&mobileAppId)
            case .ApiToken: reader.readOptional(&apiToken)
            case .UserId: reader.readOptional(&userId)
            case .DeviceToken: reader.readOptional(&deviceToken)
            }
        }) else { return nil }
        self.init(MobileAppId: mobileAppId, ApiToken: apiToken, UserId: userId, DeviceToken: deviceToken)
    }
}

extension BWDeviceAPI.Device: WireDecodable {
    private enum Key: String, CaseIterable { case deviceId, type, user }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var deviceId: String?, type: String?, user: BWDeviceAPI.User?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .deviceId: reader.readOptional(&deviceId)
            case .type: reader.readOptional(&type)
            case .user: reader.readOptional(&user)
            }
        }) else { return nil }
        self.init(deviceId: deviceId, type: type, user: user)
    }
}

extension BWDeviceAPI.User: WireDecodable {
    private enum Key: String, CaseIterable { case phone, email }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
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

    init?(wire reader: inout WireReader) {
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
