import HummingbirdCore
import NIOHTTPTypes
import NIOCore

/// Closes a connection whose request, once its head arrived, is not read to its end within
/// `timeout`: a client that trickles its body (a byte every few seconds keeps the idle timeout
/// from firing) cannot hold a connection and its buffers for long. The idle timeout of the HTTP
/// server (`HTTP1Channel.Configuration.idleTimeout`) covers the rest: a connection that sends
/// nothing, or trickles a request's head, which produces no part until it is complete.
final class RequestReadTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: timeout) {
                bound.value.close(promise: nil)
            }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }
}
