import ServiceLifecycle

extension KafkaProducer: Service {
    /// Runs until the service group shuts down (or is cancelled), then flushes and closes the
    /// producer. Listed before the services that send through it, it is shut down after them.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
