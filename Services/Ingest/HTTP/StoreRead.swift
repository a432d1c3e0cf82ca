import Foundation
import Logging

/// Runs a projection-store read for a request, counted in `pushline_ingest_store_reads_total`. A
/// store failure becomes a 503 with `Retry-After` (the read can simply be retried), logged with
/// the request id.
func readStore<T>(_ context: IngestRequestContext, _ read: () async throws -> T) async throws -> T {
    IngestMetrics.countStoreRead()
    do {
        return try await read()
    } catch {
        context.logger.warning("projection store read failed; answering 503", metadata: ["error": "\(error)"])
        throw IngestError.unavailable("projection store: \(error)")
    }
}
