/// The protocol a response came over.
// swift-format-ignore: AlwaysUseLowerCamelCase
// HTTP's own version numbers (1.0, 1.1) read better with their separator than as `http10`.
public enum HTTPVersion: Sendable, Equatable {
    case http1_0
    case http1_1
    case http2
    case http3
    case unknown
}

/// One complete HTTP response (any status: a 4xx or 5xx is a response, not an error).
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    public var version: HTTPVersion
    /// How many new connections this transfer opened (0 when it reused one): shows keep-alive and
    /// HTTP/2 multiplexing at work.
    public var newConnections: Int

    public init(
        status: Int, headers: HTTPHeaders = [:], body: [UInt8] = [], version: HTTPVersion = .http1_1,
        newConnections: Int = 0
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.version = version
        self.newConnections = newConnections
    }
}
