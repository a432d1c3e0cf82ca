import Contracts
import Foundation
import Hummingbird

/// The registration API's headers, read and validated once per request: `x-ms-track-registration`,
/// `x-ms-callback-url` (alias `x-ms-status-callback-url`) and `x-ms-callback-url-headers`.
struct RegistrationHeaders: Sendable {
    /// Whether the outcome is stored and the answer carries `RegistrationRequestId`s.
    var trackStatus: Bool
    /// Where to POST the status webhook; nil when no (or an empty) callback URL was given.
    var callbackURL: String?
    /// The header that gave `callbackURL`.
    var callbackURLField = DeviceRegistrationAPI.callbackURLHeader
    /// Extra headers of the status webhook.
    var callbackHeaders: [String: String]

    init(_ headers: HTTPFields, decoder: JSONDecoder) throws {
        trackStatus = headers[.trackRegistration].map {
            $0.trimmingCharacters(in: .whitespaces).lowercased() == "true"
        } ?? false

        let (urlText, urlField): (String?, String) =
            if let primary = headers[.callbackURL], !primary.isEmpty {
                (primary, DeviceRegistrationAPI.callbackURLHeader)
            } else {
                (headers[.statusCallbackURL], DeviceRegistrationAPI.statusCallbackURLHeader)
            }
        let trimmedURL = urlText?.trimmingCharacters(in: .whitespaces)
        callbackURLField = urlField
        if let trimmedURL, !trimmedURL.isEmpty {
            callbackURL = try FieldRules.callbackURL(trimmedURL, field: urlField)
        } else {
            callbackURL = nil
        }

        callbackHeaders = [:]
        if let text = headers[.callbackURLHeaders], !text.trimmingCharacters(in: .whitespaces).isEmpty {
            let field = DeviceRegistrationAPI.callbackURLHeadersHeader
            do {
                callbackHeaders = try decoder.decode([String: String].self, from: Data(text.utf8))
            } catch {
                throw IngestError.badRequest("must be a JSON object of string to string", field: field)
            }
            try FieldRules.headerMap(callbackHeaders, field: field)
        }
    }

    /// The status webhook URL and the header that gave it, for the app's host list to judge.
    var callbackTarget: (url: String, field: String)? {
        callbackURL.map { ($0, callbackURLField) }
    }

    /// The webhook of one registration, signed with that registration's raw API token, as the
    /// seed defines it (the token itself never leaves this function). Registrations need the
    /// client scope, so that is the app's client token, which ships in the app
    /// (docs/API.md#status-webhook). With `secrets`, the header values are sealed for `app`.
    func callback(apiToken: String, app: UUID, secrets: SecretsKeyring?) -> StatusCallback? {
        guard let callbackURL else { return nil }
        let headers = secrets.map { SealedHeaders.seal(callbackHeaders, app: app, keyring: $0) } ?? callbackHeaders
        return StatusCallback(url: callbackURL, headers: headers,
                              signature: ApiTokens.webhookSignature(apiToken: apiToken, callbackURL: callbackURL))
    }
}
