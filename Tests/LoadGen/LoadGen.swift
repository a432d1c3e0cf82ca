import Contracts
import Foundation
import Kafka
import TestSupport

/// `pushline-loadgen`: writes `MixedStream`'s deterministic mixed command stream (admin,
/// registration, notification, tracking) straight to the command topics, creating them when
/// missing, then a progress mark on every partition past the stream's end — the input of
/// `scripts/bench-processor`.
///
///   pushline-loadgen --brokers 127.0.0.1:9092 --commands 1000000 [--seed 1] [--prefix pushline.] [--partitions 12]
@main
struct LoadGen {
    static func main() async throws {
        var options: [String: String] = ["--brokers": "127.0.0.1:9092", "--commands": "100000", "--seed": "1",
                                         "--prefix": "pushline.", "--partitions": "12"]
        var arguments = CommandLine.arguments.dropFirst()
        while let name = arguments.popFirst() {
            guard options[name] != nil, let value = arguments.popFirst() else {
                FileHandle.standardError.write(Data("pushline-loadgen: unknown option or missing value: \(name)\n".utf8))
                exit(2)
            }
            options[name] = value
        }
        guard let commands = Int(options["--commands"]!), commands > 0, let seed = UInt64(options["--seed"]!),
              let partitions = Int(options["--partitions"]!), partitions > 0 else {
            FileHandle.standardError.write(Data("pushline-loadgen: --commands, --seed and --partitions take positive numbers\n".utf8))
            exit(2)
        }
        let brokers = options["--brokers"]!
        let topics = Topics(prefix: options["--prefix"]!)
        try await KafkaAdmin.createTopics(topics.commandTopics.map { ($0, partitions) }, bootstrapServers: brokers)
        let stream = MixedStream(seed: seed, sizes: .about(commands), topics: topics)
        var total = 0
        for phase in MixedStream.Phase.allCases {
            let encoded = try stream.commands(phase)
            try await MixedStream.produce(encoded, brokers: brokers)
            total += encoded.count
            print("\(phase.rawValue) \(encoded.count)")
        }
        // As a live processor would have: the log's end is past every command.
        let marks = try await MixedStream.produceProgressMarks(at: stream.end, topics: topics.commandTopics, partitions: partitions,
                                                               brokers: brokers)
        total += marks
        print("progress-marks \(marks)")
        print("total \(total)")
    }
}
