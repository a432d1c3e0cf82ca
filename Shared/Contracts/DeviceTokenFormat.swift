/// The token formats of the two push services, shared by ingest (which refuses a malformed
/// token on the routes that answer synchronously) and the processor's default verifier.
///
/// APNs: even-length hexadecimal, 64…200 characters. FCM: `[A-Za-z0-9_:-]`, 100…4096 characters.
public enum DeviceTokenFormat {
    public static func isValid(_ token: String, platform: Platform) -> Bool {
        let bytes = token.utf8
        switch platform {
        case .ios:
            return (64...200).contains(bytes.count) && bytes.count % 2 == 0 && bytes.allSatisfy(isHex)
        case .android:
            return (100...4096).contains(bytes.count) && bytes.allSatisfy(isFCM)
        }
    }

    private static func isHex(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66)
    }

    private static func isFCM(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x5f || b == 0x3a || b == 0x2d
    }
}
