import Foundation

/// Hand-written decoding of the envelopes of the hottest commands: registrations, cleanups,
/// acknowledgements and tracking reports. Decoding them with `JSONDecoder` took a third of the
/// processor's CPU time.
///
/// A value it returns is exactly what `WireJSON.decoder()` decodes from the same bytes. It
/// returns nil for other command types and whenever it is not certain (escapes, unknown or
/// repeated keys, numbers other than plain integers, dates with offsets, malformed JSON…): the
/// caller then decodes with `JSONDecoder`, which decides. A field added to one of these commands
/// is an unknown key here until it is read here too, so such records keep taking the fallback.
public enum FastEnvelope {
    public static func decode<C: Command>(_: C.Type, from data: Data) -> Envelope<C>? {
        // `C.type` names the payload type, so each cast is from `Envelope<C>` to itself.
        switch C.type {
        case .deviceRegistrationRequested: read(DeviceRegistrationRequested.self, data) as? Envelope<C>
        case .deviceCleanupRequested: read(DeviceCleanupRequested.self, data) as? Envelope<C>
        case .notificationAcknowledged: read(NotificationAcknowledged.self, data) as? Envelope<C>
        case .trackingReported: read(TrackingReported.self, data) as? Envelope<C>
        default: nil
        }
    }

    private static func read<P: Command & WireDecodable>(_: P.Type, _ data: Data) -> Envelope<P>? {
        data.withUnsafeBytes { raw in
            var reader = WireReader(raw.assumingMemoryBound(to: UInt8.self))
            guard let envelope = Envelope<P>(wire: &reader), reader.atEnd() else { return nil }
            return envelope
        }
    }
}

private enum EnvelopeKey: String, CaseIterable { case v, type, id, at, payload }
private let envelopeKeys = WireKeys<EnvelopeKey>()

extension Envelope: WireDecodable where Payload: WireDecodable {
    init?(wire reader: inout WireReader) {
        var v: Int?, type: String?, id: UUID?, at: Date?, payload: Payload?
        guard reader.object(envelopeKeys, { reader, key in
            switch key {
            case .v: reader.read(&v)
            case .type: reader.read(&type)
            case .id: reader.read(&id)
            case .at: reader.read(&at)
            case .payload: reader.read(&payload)
            }
        }), let v, let type, let id, let at, let payload else { return nil }
        self.init(v: v, type: type, id: id, at: at, payload: payload)
    }
}

extension DeviceRegistrationRequested: WireDecodable {
    private enum Key: String, CaseIterable {
        case registrationRequestId, orgId, mobileAppId, userId, platform, deviceToken, apiTokenHash, trackStatus, callback
    }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var registrationRequestId: UUID?, orgId: UUID?, mobileAppId: UUID?, userId: String?, platform: Platform?
        var deviceToken: String?, apiTokenHash: String?, trackStatus: Bool?, callback: StatusCallback?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .registrationRequestId: reader.read(&registrationRequestId)
            case .orgId: reader.read(&orgId)
            case .mobileAppId: reader.read(&mobileAppId)
            case .userId: reader.read(&userId)
            case .platform: reader.read(&platform)
            case .deviceToken: reader.read(&deviceToken)
            case .apiTokenHash: reader.read(&apiTokenHash)
            case .trackStatus: reader.read(&trackStatus)
            case .callback: reader.readOptional(&callback)
            }
        }), let registrationRequestId, let orgId, let mobileAppId, let userId, let platform, let deviceToken, let apiTokenHash,
              let trackStatus else { return nil }
        self.init(registrationRequestId: registrationRequestId, orgId: orgId, mobileAppId: mobileAppId, userId: userId,
                  platform: platform, deviceToken: deviceToken, apiTokenHash: apiTokenHash, trackStatus: trackStatus,
                  callback: callback)
    }
}

extension Platform: WireDecodable {}

extension StatusCallback: WireDecodable {
    private enum Key: String, CaseIterable { case url, headers, signature }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var url: String?, headers: [String: String]?, signature: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .url: reader.read(&url)
            case .headers: reader.read(&headers)
            case .signature: reader.read(&signature)
            }
        }), let url, let headers, let signature else { return nil }
        self.init(url: url, headers: headers, signature: signature)
    }
}

extension DeviceCleanupRequested: WireDecodable {
    private enum Key: String, CaseIterable { case orgId, mobileAppId, userId, deviceToken, apiTokenHash }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var orgId: UUID?, mobileAppId: UUID?, userId: String?, deviceToken: String?, apiTokenHash: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .orgId: reader.read(&orgId)
            case .mobileAppId: reader.read(&mobileAppId)
            case .userId: reader.read(&userId)
            case .deviceToken: reader.readOptional(&deviceToken)
            case .apiTokenHash: reader.read(&apiTokenHash)
            }
        }), let orgId, let mobileAppId, let userId, let apiTokenHash else { return nil }
        self.init(orgId: orgId, mobileAppId: mobileAppId, userId: userId, deviceToken: deviceToken, apiTokenHash: apiTokenHash)
    }
}

extension NotificationAcknowledged: WireDecodable {
    private enum Key: String, CaseIterable { case mobileAppId, notificationId, deviceToken, businessId }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var mobileAppId: UUID?, notificationId: String?, deviceToken: String?, businessId: String?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .mobileAppId: reader.read(&mobileAppId)
            case .notificationId: reader.read(&notificationId)
            case .deviceToken: reader.read(&deviceToken)
            case .businessId: reader.readOptional(&businessId)
            }
        }), let mobileAppId, let notificationId, let deviceToken else { return nil }
        self.init(mobileAppId: mobileAppId, notificationId: notificationId, deviceToken: deviceToken, businessId: businessId)
    }
}

extension TrackingReported: WireDecodable {
    private enum Key: String, CaseIterable { case mobileAppId, deliveryId, events }
    private static let keys = WireKeys<Key>()

    init?(wire reader: inout WireReader) {
        var mobileAppId: UUID?, deliveryId: UUID?, events: [TrackingEvent]?
        guard reader.object(Self.keys, { reader, key in
            switch key {
            case .mobileAppId: reader.read(&mobileAppId)
            case .deliveryId: reader.read(&deliveryId)
            case .events: reader.read(&events)
            }
        }), let mobileAppId, let deliveryId, let events else { return nil }
        self.init(mobileAppId: mobileAppId, deliveryId: deliveryId, events: events)
    }
}

extension TrackingEvent: WireDecodable {
    /// The pair `[broadlogId, action]`, as `init(from:)` reads it.
    init?(wire reader: inout WireReader) {
        guard reader.consume("["), let broadlogId = String(wire: &reader), reader.consume(","),
              let action = TrackingAction(wire: &reader), reader.consume("]") else { return nil }
        self.init(broadlogId: broadlogId, action: action)
    }
}

extension TrackingAction: WireDecodable {}
