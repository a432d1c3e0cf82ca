import Contracts
import Foundation
import Hummingbird
import WireCodec

/// Reads and decodes JSON request bodies under ingest's rules, before any command exists:
/// 415 unless the body is `application/json` (UTF-8), 413 past the size limit (checked on
/// `Content-Length` first and again while collecting, for chunked bodies), 400 naming the
/// offending field when the JSON does not decode, and 400 for a NUL character (`\u0000`) in
/// any string: PostgreSQL cannot store it in text, so a command carrying one would be refused
/// by a PostgreSQL projection store forever.
enum JSONBody {
    /// Collects the body of a route that needs one.
    static func collect(_ request: Request, limit: Int) async throws -> ByteBuffer {
        let contentType = request.headers[.contentType]
        if let contentType, !isJSON(contentType) {
            throw unsupportedMediaType
        }
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }) {
            if declared > limit { throw tooLarge(limit) }
            if contentType == nil, declared > 0 { throw unsupportedMediaType }
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw tooLarge(limit)
        }
        guard buffer.readableBytes > 0 else {
            throw IngestError.badRequest("a JSON body is required", field: "body", code: .bodyMissing)
        }
        if contentType == nil { throw unsupportedMediaType }
        if buffer.withUnsafeReadableBytes({ JSONEscapes.containNUL($0) }) {
            throw IngestError.badRequest("text must not contain the NUL character (\\u0000)", field: "body", code: .bodyMalformed)
        }
        return buffer
    }

    /// Decodes `T` straight from the collected bytes (no copy into an intermediate `Data`): the
    /// shapes of the high-volume routes by hand when they are plain (`FastRequestBody`), anything
    /// else — and every error — by `decoder`.
    /// A native route's body (`ListedFields`) with a member it does not list is refused
    /// (`refuseUnknownFields`).
    static func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer, decoder: JSONDecoder) throws -> T {
        if let value = buffer.withUnsafeReadableBytes({ FastRequestBody.decode(T.self, from: $0) }) { return value }
        let value = try decodeWithFoundation(type, from: buffer, decoder: decoder)
        if let listed = T.self as? any ListedFields.Type {
            try refuseUnknownFields(in: buffer, fields: listed.fields, nested: listed.nestedFields)
        }
        return value
    }

    private static func decodeWithFoundation<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer, decoder: JSONDecoder) throws -> T {
        do {
            return try buffer.withUnsafeReadableBytes { bytes in
                // The Data only borrows the buffer's bytes while the decoder runs; nothing it
                // produces refers to them afterwards.
                guard let base = bytes.baseAddress else { return try decoder.decode(T.self, from: Data()) }
                let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
                return try decoder.decode(T.self, from: data)
            }
        } catch let error as DecodingError {
            throw problem(for: error)
        }
    }

    /// Refuses a member of the body's object that `fields` does not name, with a 400 naming it
    /// (at most 64 characters of its name), for the native routes' bodies (`ListedFields`), and a
    /// member of a `nested` field's object that its list does not name (`to.topic`). Called after
    /// the body decoded, so that it reads valid JSON; a body that is not an object names no field.
    static func refuseUnknownFields(in buffer: ByteBuffer, fields: Set<String>, nested: [String: Set<String>] = [:]) throws {
        let unknown = buffer.withUnsafeReadableBytes { bytes -> String? in
            var reader = WireReader(bytes.assumingMemoryBound(to: UInt8.self))
            let (read, found) = firstUnlisted(&reader, fields: fields, nested: nested)
            if read || found != nil { return found }
            // A member name with an escape, which the fast reader leaves to Foundation, or a nested
            // field's value that is not an object (null).
            guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else { return nil }
            if let outer = object.keys.sorted().first(where: { !fields.contains($0) }) { return outer }
            for (name, members) in nested.sorted(by: { $0.key < $1.key }) {
                if let inner = (object[name] as? [String: Any])?.keys.sorted().first(where: { !members.contains($0) }) {
                    return name + "." + inner
                }
            }
            return nil
        }
        guard let unknown else { return }
        let named = unknown.count > 64 ? String(unknown.prefix(64)) + "…" : unknown
        throw IngestError.badRequest("unknown field: this route takes only the fields its documentation lists", field: named, code: .fieldUnknown)
    }

    /// The first member of the object at `reader` that `fields` does not name, or of a `nested`
    /// field's object that its list does not name (`to.topic`); `read` is false when the fast
    /// reader cannot tell (a name with an escape, a value that is not what it reads).
    private static func firstUnlisted(_ reader: inout WireReader, fields: Set<String>, nested: [String: Set<String>],
                                      prefix: String = "") -> (read: Bool, found: String?) {
        var found: String?
        let read = reader.members { reader, raw in
            guard let name = WireReader.string(utf8: raw) else { return false }
            guard fields.contains(name) else {
                found = prefix + name
                return false
            }
            guard let members = nested[name] else { return reader.skipValue() != nil }
            let inner = firstUnlisted(&reader, fields: members, nested: [:], prefix: name + ".")
            found = inner.found
            return inner.read && found == nil
        }
        return (read, found)
    }

    /// The first byte of the JSON text that is not white space (`[` tells an array from an object).
    static func firstSignificantByte(of buffer: ByteBuffer) -> UInt8? {
        buffer.readableBytesView.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
    }

    /// True for `application/json`, with no charset or a UTF-8 one (JSON is UTF-8, RFC 8259).
    static func isJSON(_ contentType: String) -> Bool {
        var parts = contentType.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let mediaType = parts.next(),
              mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "application/json" else { return false }
        while let parameter = parts.next() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else { continue }
            let charset = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \t\"")).lowercased()
            if charset != "utf-8" && charset != "utf8" { return false }
        }
        return true
    }

    /// Names the field a decoding error is about (`[3].UserId`, `RegistrationRequestIds[1]`, or
    /// `body` for the document itself). Never quotes the body: it may hold an API token.
    static func problem(for error: DecodingError) -> IngestError {
        switch error {
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return .badRequest("the body is not valid JSON", field: "body", code: .bodyMalformed)
            }
            if context.debugDescription == UnknownFields.message {
                let path = fieldPath(context.codingPath)
                return .badRequest(UnknownFields.message, field: path.count > 64 ? String(path.prefix(64)) + "…" : path, code: .fieldUnknown)
            }
            return .badRequest("invalid value", field: fieldPath(context.codingPath))
        case .typeMismatch(let type, let context):
            return .badRequest("expected \(describe(type))", field: fieldPath(context.codingPath), code: .fieldType)
        case .valueNotFound(let type, let context):
            return .badRequest("expected \(describe(type)), found null", field: fieldPath(context.codingPath), code: .fieldType)
        case .keyNotFound(let key, let context):
            return .badRequest("missing field", field: fieldPath(context.codingPath + [key]), code: .fieldMissing)
        @unknown default:
            return .badRequest("the body could not be decoded", field: "body", code: .bodyMalformed)
        }
    }

    /// Renders a coding path as `[3].UserId`; the empty path is the body itself.
    static func fieldPath(_ path: [any CodingKey]) -> String {
        var out = ""
        for key in path {
            if let index = key.intValue {
                out += "[\(index)]"
            } else {
                out += out.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return out.isEmpty ? "body" : out
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type: "an integer"
        case is [Any].Type: "a JSON array"
        case is [String: Any].Type: "a JSON object"
        default: "a value of another JSON type"
        }
    }

    private static let unsupportedMediaType = IngestError.rejected(
        .unsupportedMediaType, .init(error: "the body must be application/json (UTF-8)", field: "Content-Type", code: .mediaTypeUnsupported))

    private static func tooLarge(_ limit: Int) -> IngestError {
        .rejected(.contentTooLarge, .init(error: "the body is larger than \(limit) bytes", field: "body", code: .bodyTooLarge))
    }
}
