import Contracts
import Foundation
import Kafka
import TestSupport

/// `pushline-loadgen`: writes benchmark input straight to Kafka.
///
/// By default `MixedStream`'s deterministic mixed command stream (admin, registration,
/// notification, tracking) to the command topics, creating them when missing, then a progress
/// mark on every partition past the stream's end — the input of `scripts/bench-processor`:
///
///   pushline-loadgen --brokers 127.0.0.1:9092 --commands 1000000 [--seed 1] [--prefix pushline.] [--partitions 12]
///                    [--apps 1] [--app-parts 1]
///
/// With `--apps N`, the commands are N apps' streams of mixed sizes (app i's share is
/// proportional to 1/√(i+1), so the largest has about ten times the smallest's), written phase by
/// phase: what shards spread over processors (docs/ARCHITECTURE.md#scale-out).
///
/// With `--emulate-part i/S` (by user; or `i/S/ideal`, `i/S/token`), one app's stream is only what
/// part `i` of `S` would read if the app were split into `S` parts (`MixedStream.Emulation`):
/// timing one processor on each part against one on the whole stream measures what such a split
/// would give before it is built (`scripts/bench-app-split`).
///
/// With `--app-parts S`, every app is split into `S` parts (docs/ARCHITECTURE.md#one-app-in-parts):
/// each command goes to the parts it concerns, as a log written split has it; processors apply it
/// with `PUSHLINE_APP_PARTS=S`.
///
/// `pushline-loadgen outbound …` writes the sender's input instead (`OutboundLoad`).
@main
struct LoadGen {
    static func main() async throws {
        var arguments = CommandLine.arguments.dropFirst()
        do {
            if arguments.first == "outbound" {
                arguments.removeFirst()
                try await OutboundLoad.run(arguments)
            } else {
                try await mixed(arguments)
            }
        } catch let error as LoadGenError {
            FileHandle.standardError.write(Data("pushline-loadgen: \(error.message)\n".utf8))
            exit(2)
        }
    }

    static func mixed(_ arguments: ArraySlice<String>) async throws {
        let options = try options(arguments, defaults: ["--brokers": "127.0.0.1:9092", "--commands": "100000", "--seed": "1",
                                                        "--prefix": "pushline.", "--partitions": "12", "--apps": "1",
                                                        "--emulate-part": "", "--app-parts": "1"])
        guard let commands = Int(options["--commands"]!), commands > 0, let seed = UInt64(options["--seed"]!),
              let partitions = Int(options["--partitions"]!), partitions > 0, let apps = Int(options["--apps"]!), apps > 0 else {
            throw LoadGenError("--commands, --seed, --partitions and --apps take positive numbers")
        }
        let part = try emulatedPart(options["--emulate-part"]!)
        guard part == nil || apps == 1 else { throw LoadGenError("--emulate-part splits one app: it goes with --apps 1") }
        guard let appParts = Int(options["--app-parts"]!), (1...64).contains(appParts) else {
            throw LoadGenError("--app-parts takes a number from 1 to 64")
        }
        guard part == nil || appParts == 1 else { throw LoadGenError("--emulate-part emulates a split: it does not go with --app-parts") }
        let brokers = options["--brokers"]!
        let topics = Topics(prefix: options["--prefix"]!)
        try await KafkaAdmin.createTopics(topics.commandTopics.map { ($0, partitions) }, bootstrapServers: brokers)
        let weights = (0..<apps).map { 1 / Double($0 + 1).squareRoot() }
        let streams = weights.enumerated().map { i, weight in
            // Seeds far apart: MixedStream derives its ids from the seed plus small counts.
            var stream = MixedStream(seed: apps == 1 ? seed : seed &* 1_000_003 &+ UInt64(i) &* 0x9E37_79B9,
                                     sizes: .about(max(300, Int(Double(commands) * weight / weights.reduce(0, +)))), topics: topics)
            stream.emulatedPart = part
            stream.parts = AppParts(appParts)
            return stream
        }
        var total = 0
        for phase in MixedStream.Phase.allCases {
            let encoded = try streams.flatMap { try $0.commands(phase) }
            try await MixedStream.produce(encoded, brokers: brokers, partitions: partitions)
            total += encoded.count
            print("\(phase.rawValue) \(encoded.count)")
        }
        if apps > 1 { print("apps \(apps)") }
        // As a live processor would have: the log's end is past every command.
        let marks = try await MixedStream.produceProgressMarks(at: streams.map(\.end).max()!, topics: topics.commandTopics,
                                                               partitions: partitions, brokers: brokers)
        total += marks
        print("progress-marks \(marks)")
        print("total \(total)")
    }

    /// `i/S`, `i/S/ideal` or `i/S/token` (empty: none).
    static func emulatedPart(_ text: String) throws -> (index: Int, count: Int, emulation: MixedStream.Emulation)? {
        guard !text.isEmpty else { return nil }
        let fields = text.split(separator: "/", omittingEmptySubsequences: false)
        guard fields.count == 2 || fields.count == 3, let index = Int(fields[0]), let count = Int(fields[1]), count > 0,
              (0..<count).contains(index),
              let emulation = fields.count == 3 ? MixedStream.Emulation(rawValue: String(fields[2])) : .user
        else { throw LoadGenError("--emulate-part takes i/S, i/S/ideal or i/S/token, 0 <= i < S (got \(text))") }
        return (index, count, emulation)
    }

    /// `--name value` pairs over `defaults`; a name not among them, or without a value, is an error.
    static func options(_ arguments: ArraySlice<String>, defaults: [String: String]) throws -> [String: String] {
        var options = defaults
        var arguments = arguments
        while let name = arguments.popFirst() {
            guard options[name] != nil, let value = arguments.popFirst() else {
                throw LoadGenError("unknown option or missing value: \(name)")
            }
            options[name] = value
        }
        return options
    }
}

/// A usage error: printed, exit status 2.
struct LoadGenError: Error {
    var message: String

    init(_ message: String) { self.message = message }
}
