import Foundation
import Hummingbird

/// Builds JSON answers.
enum JSONResponse {
    static func make<T: Encodable>(_ value: T, status: HTTPResponse.Status, encoder: JSONEncoder,
                                   headers: HTTPFields = [:]) throws -> Response {
        let data = try encoder.encode(value)
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
