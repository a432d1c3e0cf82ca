import Kafka

extension SharedSettings {
    /// Creates the topics these settings name that do not exist yet, with `partitions` each:
    /// producing to a missing topic would auto-create it with the broker's default count.
    public func createMissingTopics() async throws {
        try await KafkaAdmin.createTopics(topics.all(commandPartitions: partitions, outputPartitions: partitions),
                                          bootstrapServers: brokers, properties: kafkaProperties)
    }

    /// A producer of these brokers and properties, named `clientId` in the broker's logs.
    public func producerConfiguration(clientId: String) -> KafkaProducerConfiguration {
        var configuration = KafkaProducerConfiguration()
        configuration.bootstrapServers = brokers
        configuration.clientId = clientId
        configuration.properties = kafkaProperties
        return configuration
    }

    /// A consumer of these brokers and properties in group `groupId`.
    public func consumerConfiguration(groupId: String, clientId: String) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(groupId: groupId)
        configuration.bootstrapServers = brokers
        configuration.clientId = clientId
        configuration.properties = kafkaProperties
        return configuration
    }
}
