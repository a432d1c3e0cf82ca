import Contracts

/// Decides whether a device token can receive pushes: the "dry run" of seed 000.
///
/// The default checks the platform's token format; a deployment that holds APNs/FCM
/// credentials may plug in a verifier that sends a real invisible notification.
public protocol DeviceTokenVerifier: Sendable {
    func verify(token: String, platform: Platform) -> Bool
}

/// APNs: even-length hexadecimal, 64…200 characters. FCM: `[A-Za-z0-9_:-]`, 100…4096 characters.
public struct TokenFormatVerifier: DeviceTokenVerifier {
    public init() {}

    public func verify(token: String, platform: Platform) -> Bool {
        let bytes = token.utf8
        switch platform {
        case .ios:
            return (64...200).contains(bytes.count) && bytes.count % 2 == 0 && bytes.allSatisfy(Self.isHex)
        case .android:
            return (100...4096).contains(bytes.count) && bytes.allSatisfy(Self.isFCM)
        }
    }

    private static func isHex(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66)
    }

    private static func isFCM(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x5f || b == 0x3a || b == 0x2d
    }
}
