import Contracts
import Foundation
import WireCodec

/// A JSON Web Token in compact serialization (`header.claims.signature`), split and decoded but
/// not trusted.
///
/// The mock push servers record it and check its signature themselves with swift-crypto, with no
/// JWT library, so that they are a check of the client's signing independent of how it was done.
public struct DecodedJWT: Sendable, Equatable {
    /// The token as it arrived.
    public let compact: String
    /// The JOSE header, a JSON object (`alg`, `kid`, `typ`).
    public let header: JSONValue
    /// The claims, a JSON object.
    public let claims: JSONValue
    /// `header.claims` as sent: the bytes the signature covers.
    public let signingInput: Data
    /// The signature, base64url-decoded.
    public let signature: Data

    /// Splits and decodes `compact`; nil unless it is three base64url parts without padding
    /// (RFC 7515) of which the first two are JSON objects.
    public init?(compact: String) {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Self.base64URLDecoded(parts[0]),
              let claimsBytes = Self.base64URLDecoded(parts[1]),
              let signature = Self.base64URLDecoded(parts[2]),
              let header = try? JSONValue.parse(headerBytes), case .object = header,
              let claims = try? JSONValue.parse(claimsBytes), case .object = claims
        else { return nil }
        self.compact = compact
        self.header = header
        self.claims = claims
        self.signingInput = Data("\(parts[0]).\(parts[1])".utf8)
        self.signature = signature
    }

    /// The string member `name` of the header, if it is one.
    public func headerString(_ name: String) -> String? { header[name]?.stringValue }

    /// The string member `name` of the claims, if it is one.
    public func claimString(_ name: String) -> String? { claims[name]?.stringValue }

    /// The numeric member `name` of the claims (NumericDate: seconds since the epoch), if it is one.
    public func claimNumber(_ name: String) -> Double? {
        if case .number(let value)? = claims[name] { value } else { nil }
    }

    /// Base64url without padding, the only encoding RFC 7515 allows in a compact JWS.
    static func base64URLDecoded(_ text: Substring) -> Data? {
        guard text.utf8.allSatisfy({ byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }), text.utf8.count % 4 != 1 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

extension JSONValue {
    /// The string, if this is one.
    var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }
}
