import Foundation
import Hummingbird

/// The field rules shared by every dialect; each failure is a 400 naming the field.
enum FieldRules {
    /// A present, non-empty string.
    /// (`field` is only rendered on failure: batch elements name themselves `[3].UserId`.)
    static func required(_ value: String?, field: @autoclosure () -> String) throws -> String {
        guard let value, !value.isEmpty else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) is required", field: field)
        }
        return value
    }

    /// A present UUID in its canonical text form.
    static func uuid(_ value: String?, field: @autoclosure () -> String) throws -> UUID {
        let text = try required(value, field: field())
        guard let id = UUID(uuidString: text) else {
            let field = field()
            throw IngestError.badRequest("\(lastComponent(of: field)) must be a UUID", field: field)
        }
        return id
    }

    /// A path parameter that must be a UUID.
    static func uuidParameter(_ name: String, in context: IngestRequestContext) throws -> UUID {
        guard let id = context.parameters.get(name).flatMap({ UUID(uuidString: String($0)) }) else {
            throw IngestError.badRequest("\(name) in the path must be a UUID", field: name)
        }
        return id
    }

    /// An absolute `http`/`https` URL with a host, as given (the signature is computed over
    /// exactly these bytes). Characters a URL may not contain are refused rather than escaped.
    static func callbackURL(_ text: String, field: String) throws -> String {
        let hasForbiddenByte = text.utf8.contains { $0 <= 0x20 || $0 == 0x7F }
        guard !hasForbiddenByte, text.utf8.count <= 4096,
              let url = URL(string: text),
              let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else {
            throw IngestError.badRequest("must be an absolute http(s) URL with a host", field: field)
        }
        return text
    }

    /// Headers a webhook will be sent with: valid HTTP field names and values (no CR/LF), so a
    /// client cannot smuggle extra header lines into the processor's request.
    static func headerMap(_ headers: [String: String], field: String) throws {
        for (name, value) in headers {
            guard HeaderField.Name(name) != nil, HeaderField.isValidValue(value) else {
                throw IngestError.badRequest("must be a JSON object of HTTP header names to header values", field: field)
            }
        }
    }

    private static func lastComponent(of field: String) -> Substring {
        field.split(separator: ".").last ?? Substring(field)
    }
}
