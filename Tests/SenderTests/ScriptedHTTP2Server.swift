import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization
import TestSupport

/// An HTTP/2-over-TLS server on 127.0.0.1 that does what a request's path says, for the
/// transport's failure cases that the mock providers cannot stage on cue:
/// - `/hold…`: no answer (until a `/goaway…` answers the one with the lowest stream ID);
/// - `/reset`: `RST_STREAM REFUSED_STREAM`;
/// - `/close`: the connection is closed at once;
/// - `/goaway…`: `GOAWAY` with the lowest held stream as the last one, which is then answered;
/// - `/later…`: answered after 20 ms (with `maxConcurrentStreams`: the client must queue);
/// - anything else: 200 with the path as the body.
final class ScriptedHTTP2Server: Sendable {
    /// What the server saw, for assertions.
    struct Log: Sendable {
        var connections = 0
        var held = 0
        var open = 0
        var mostOpen = 0
    }

    private let channel: any Channel
    private let shared: Shared

    /// The state the connections share with the test.
    final class Shared: Sendable {
        let log = Mutex(Log())
        let children = Mutex<[any Channel]>([])
    }

    private init(channel: any Channel, shared: Shared) {
        self.channel = channel
        self.shared = shared
    }

    /// Starts listening on `port` (0: one the system picks).
    static func start(ca: TestCA, port: Int = 0, maxConcurrentStreams: Int = 100) async throws -> ScriptedHTTP2Server {
        var tls = ca.serverTLSConfiguration()
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let shared = Shared()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                shared.log.withLock { $0.connections += 1 }
                shared.children.withLock { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        NIOSSLServerHandler(context: context),
                        NIOHTTP2Handler(mode: .server, initialSettings: [
                            HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams),
                        ]),
                        Streams(shared: shared),
                    ])
                }
            }
            .bind(host: "127.0.0.1", port: port)
            .get()
        return ScriptedHTTP2Server(channel: channel, shared: shared)
    }

    var port: Int { channel.localAddress!.port! }
    var baseURL: String { "https://127.0.0.1:\(port)" }
    var log: Log { shared.log.withLock { $0 } }

    /// Stops listening and cuts every connection off.
    func stop() async {
        try? await channel.close()
        for child in shared.children.withLock({ $0 }) { try? await child.close() }
    }

    /// Waits (at most 10 s) until `condition` holds for the log; returns whether it did.
    func wait(until condition: (Log) -> Bool) async throws -> Bool {
        for _ in 0..<1000 {
            if condition(log) { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    private final class Streams: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame

        private let shared: Shared
        private var paths: [HTTP2StreamID: String] = [:]
        private var held: [HTTP2StreamID] = []

        init(shared: Shared) {
            self.shared = shared
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            switch frame.payload {
            case .headers(let headers):
                paths[frame.streamID] = headers.headers.first(name: ":path") ?? ""
                if headers.endStream { act(context, frame.streamID) }
            case .data(let data):
                if data.endStream { act(context, frame.streamID) }
            default:
                break
            }
        }

        private func act(_ context: ChannelHandlerContext, _ id: HTTP2StreamID) {
            let path = paths.removeValue(forKey: id) ?? ""
            shared.log.withLock { log in
                log.open += 1
                log.mostOpen = max(log.mostOpen, log.open)
            }
            if path.hasPrefix("/hold") {
                held.append(id)
                shared.log.withLock { $0.held += 1 }
            } else if path == "/reset" {
                shared.log.withLock { $0.open -= 1 }
                context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.refusedStream))), promise: nil)
            } else if path == "/close" {
                context.close(promise: nil)
            } else if path.hasPrefix("/goaway") {
                // The lowest: requests' bodies may complete out of stream order.
                guard let last = held.min() else { return answer(context, id, path) }
                context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream,
                                                         payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil))),
                              promise: nil)
                held.removeAll { $0 == last }
                answer(context, last, "/held")
            } else if path.hasPrefix("/later") {
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .milliseconds(20)) {
                    loopBound.value.0.answer(loopBound.value.1, id, path)
                }
            } else {
                answer(context, id, path)
            }
        }

        private func answer(_ context: ChannelHandlerContext, _ id: HTTP2StreamID, _ body: String) {
            shared.log.withLock { $0.open -= 1 }
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: [":status": "200"])))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: body)),
                                                                                                   endStream: true)))),
                                  promise: nil)
        }
    }
}
