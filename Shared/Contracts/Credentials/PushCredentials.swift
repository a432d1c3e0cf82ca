import Foundation
import WireCodec

/// The push services Pushline delivers through.
public enum PushProvider: String, Codable, Sendable, CaseIterable {
    case apns, fcm
}

/// Which APNs host a key is used against (docs/API.md#push-credentials).
public enum APNsEnvironment: String, Codable, Sendable, CaseIterable {
    case production, sandbox
}

/// An app's credentials for APNs and FCM as commands and the projection store keep them: what
/// is not secret in clear, the secret sealed with the deployment's key (`SecretsKeyring`).
/// Only the sender opens the seal.
public struct PushCredentials: Codable, Sendable, Equatable {
    public var apns: APNsCredentials?
    public var fcm: FCMCredentials?

    public init(apns: APNsCredentials? = nil, fcm: FCMCredentials? = nil) {
        self.apns = apns
        self.fcm = fcm
    }

    public var isEmpty: Bool { apns == nil && fcm == nil }
}

/// Token-based APNs authentication: a `.p8` signing key of an Apple developer team.
public struct APNsCredentials: Codable, Sendable, Equatable {
    public var teamId: String
    public var keyId: String
    /// The app's bundle id: the `apns-topic` of its pushes.
    public var bundleId: String
    public var environment: APNsEnvironment
    /// `SHA256:` and the base64 SHA-256 of the key's public part (DER): tells keys apart
    /// without showing them.
    public var fingerprint: String
    /// The `.p8` PEM, sealed.
    public var privateKey: SealedSecret

    public init(teamId: String, keyId: String, bundleId: String, environment: APNsEnvironment, fingerprint: String,
                privateKey: SealedSecret) {
        self.teamId = teamId
        self.keyId = keyId
        self.bundleId = bundleId
        self.environment = environment
        self.fingerprint = fingerprint
        self.privateKey = privateKey
    }
}

/// FCM HTTP v1 authentication: a Google service account of the Firebase project.
public struct FCMCredentials: Codable, Sendable, Equatable {
    public var projectId: String
    public var clientEmail: String
    public var privateKeyId: String?
    /// Where access tokens are obtained (the account's `token_uri`).
    public var tokenUri: String
    /// `SHA256:` and the base64 SHA-256 of the account key's public part (DER).
    public var fingerprint: String
    /// The whole service-account JSON, sealed.
    public var serviceAccount: SealedSecret

    public init(projectId: String, clientEmail: String, privateKeyId: String?, tokenUri: String, fingerprint: String,
                serviceAccount: SealedSecret) {
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.privateKeyId = privateKeyId
        self.tokenUri = tokenUri
        self.fingerprint = fingerprint
        self.serviceAccount = serviceAccount
    }
}

/// The fields of a Google service-account key file Pushline reads (the file has more).
public struct GoogleServiceAccount: Codable, Sendable, Equatable {
    public var type: String?
    public var projectId: String?
    public var privateKeyId: String?
    public var privateKey: String?
    public var clientEmail: String?
    public var tokenUri: String?

    enum CodingKeys: String, CodingKey {
        case type
        case projectId = "project_id"
        case privateKeyId = "private_key_id"
        case privateKey = "private_key"
        case clientEmail = "client_email"
        case tokenUri = "token_uri"
    }

    public init(type: String? = "service_account", projectId: String?, privateKeyId: String?, privateKey: String?,
                clientEmail: String?, tokenUri: String?) {
        self.type = type
        self.projectId = projectId
        self.privateKeyId = privateKeyId
        self.privateKey = privateKey
        self.clientEmail = clientEmail
        self.tokenUri = tokenUri
    }
}

extension PushCredentials {
    /// The JSON the store keeps (keys sorted: the same credentials give the same bytes in
    /// either store and in the changelog).
    public func storedJSON() throws -> String {
        String(decoding: try Self.encoder.encode(self), as: UTF8.self)
    }

    public static func fromStoredJSON(_ text: String) throws -> PushCredentials {
        try JSONDecoder().decode(PushCredentials.self, from: Data(text.utf8))
    }

    private static let encoder = WireJSON.encoder()
}
