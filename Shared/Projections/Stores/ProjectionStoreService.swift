import PostgresProjections
import Projections
import SQLiteProjections
import Logging
import ServiceLifecycle

/// Keeps a store open while its service group runs and closes it when the group shuts down (or
/// is cancelled). Listed before the services that use the store, it is closed after them.
public struct ProjectionStoreService: Service {
    public let store: any ProjectionStore

    public init(_ store: any ProjectionStore) {
        self.store = store
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await store.close()
    }
}

extension ProjectionStoreFactory {
    /// Opens the store at `location`, runs `body` with it and closes it, whatever `body` does.
    public static func withStore<T>(_ location: String, logger: Logger,
                                    _ body: (any ProjectionStore) async throws -> T) async throws -> T {
        let store = try await open(location, logger: logger)
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }
}
