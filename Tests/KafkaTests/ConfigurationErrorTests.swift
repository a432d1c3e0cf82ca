import Kafka
import XCTest

final class ConfigurationErrorTests: XCTestCase {
    func testInvalidProducerPropertyValueThrowsKafkaErrorNamingTheProperty() {
        var configuration = KafkaProducerConfiguration()
        configuration.properties = ["socket.timeout.ms": "soon"]
        XCTAssertThrowsError(try KafkaProducer(configuration: configuration, logger: KafkaTestSupport.logger)) { error in
            let kafkaError = error as? KafkaError
            XCTAssertEqual(kafkaError?.name, "_INVALID_ARG")
            XCTAssertTrue(kafkaError?.message.contains("socket.timeout.ms") ?? false, "\(error)")
            XCTAssertFalse(kafkaError?.isRetriable ?? true)
        }
    }

    func testUnknownConsumerPropertyThrowsKafkaErrorNamingTheProperty() {
        var configuration = KafkaConsumerConfiguration(groupId: "g")
        configuration.properties = ["no.such.property": "1"]
        XCTAssertThrowsError(
            try KafkaConsumer(
                configuration: configuration, topics: ["t"], rebalance: KafkaTestSupport.startAtBeginning,
                logger: KafkaTestSupport.logger
            )
        ) { error in
            XCTAssertTrue((error as? KafkaError)?.message.contains("no.such.property") ?? false, "\(error)")
        }
    }

    func testInvalidCompressionThrowsKafkaError() {
        var configuration = KafkaProducerConfiguration()
        // `compression` is typed; a codec librdkafka does not know can still come in `properties`.
        configuration.properties["compression.codec"] = "brotli"
        XCTAssertThrowsError(try KafkaProducer(configuration: configuration, logger: KafkaTestSupport.logger)) { error in
            XCTAssertTrue((error as? KafkaError)?.message.contains("compression.codec") ?? false, "\(error)")
        }
    }
}
