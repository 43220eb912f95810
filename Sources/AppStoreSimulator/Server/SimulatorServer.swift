import NIOCore
import NIOHTTP1
import NIOPosix

/// The simulator over HTTP/1.1 (SwiftNIO): keep-alive, many connections, one event loop per core.
/// Plain HTTP: put nginx in front for TLS and HTTP/2 (the HTTP module's own tests do).
public final class SimulatorServer: Sendable {
    public let simulator: Simulator
    public let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    private init(simulator: Simulator, port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.simulator = simulator
        self.port = port
        self.group = group
        self.channel = channel
    }

    /// Binds and starts serving; `port` 0 picks a free port (read it from `port`).
    /// `threads` 0 means one event loop per core.
    public static func start(simulator: Simulator, host: String = "127.0.0.1", port: Int = 0, threads: Int = 0)
        async throws -> SimulatorServer
    {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads > 0 ? threads : System.coreCount)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(SimulatorHTTPHandler(simulator: simulator))
                }
            }
        do {
            let channel = try await bootstrap.bind(host: host, port: port).get()
            return SimulatorServer(simulator: simulator, port: channel.localAddress?.port ?? port, group: group, channel: channel)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Stops accepting, closes, and stops the event loops.
    public func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// Serves until the listening channel closes.
    public func wait() async throws { try await channel.closeFuture.get() }
}

/// One connection: gathers a request, asks the simulator, writes what it says, misbehaviour included.
final class SimulatorHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maximumBody = 1 << 20
    let simulator: Simulator
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var bodyTooLarge = false

    init(simulator: Simulator) { self.simulator = simulator }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body.removeAll(keepingCapacity: true)
            bodyTooLarge = false
        case .body(var buffer):
            if body.count + buffer.readableBytes > Self.maximumBody {
                bodyTooLarge = true
            } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body += bytes
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let pathEnd = head.uri.firstIndex(of: "?") ?? head.uri.endIndex
            let query = pathEnd < head.uri.endIndex ? SimulatorRequest.parseQuery(head.uri[head.uri.index(after: pathEnd)...]) : []
            let request = SimulatorRequest(
                method: head.method.rawValue, path: String(head.uri[..<pathEnd]), query: query,
                headers: head.headers.map { ($0.name, $0.value) }, body: body)
            let reply: SimulatorReply = bodyTooLarge ? .respond(status: 413, headers: [], body: []) : simulator.handle(request)
            send(reply, context: context, keepAlive: head.isKeepAlive, version: head.version)
        }
    }

    private func send(_ reply: SimulatorReply, context: ChannelHandlerContext, keepAlive: Bool, version: HTTPVersion) {
        switch reply {
        case .delayed(let milliseconds, let inner):
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
                let (handler, context) = bound.value
                guard context.channel.isActive else { return }
                handler.send(inner, context: context, keepAlive: keepAlive, version: version)
            }
        case .reset:
            // SO_LINGER with a zero timeout makes close() send RST instead of FIN.
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            guard let socket = context.channel as? any SocketOptionProvider else {
                context.close(promise: nil)
                return
            }
            socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in bound.value.close(promise: nil) }
        case .respond(let status, let headers, let body):
            writeHead(status: status, headers: headers, contentLength: body.count, keepAlive: keepAlive, version: version, context: context)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                done.whenComplete { _ in bound.value.close(promise: nil) }
            }
        case .truncated(let status, let headers, let body):
            writeHead(status: status, headers: headers, contentLength: body.count, keepAlive: false, version: version, context: context)
            let half = Array(body.prefix(body.count / 2))
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: half))))).whenComplete { _ in
                bound.value.close(promise: nil)
            }
        }
    }

    private func writeHead(
        status: Int, headers: [(String, String)], contentLength: Int, keepAlive: Bool, version: HTTPVersion,
        context: ChannelHandlerContext
    ) {
        var fields = HTTPHeaders(headers)
        fields.replaceOrAdd(name: "Content-Length", value: String(contentLength))
        if !keepAlive { fields.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status), headers: fields)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
