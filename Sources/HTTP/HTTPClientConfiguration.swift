/// How an `HTTPClient` talks: timeouts, limits, TLS trust and protocol.
public struct HTTPClientConfiguration: Sendable {
    public enum ProtocolPreference: Sendable {
        /// HTTP/2 over TLS when the server offers it (ALPN), HTTP/1.1 otherwise and for plain `http://`.
        /// HTTP/2 is never used without TLS: Debian 12's libcurl 7.88.1 breaks on reused h2c connections.
        case http2OverTLS
        /// HTTP/1.1 with keep-alive only.
        case http1
    }

    /// The longest a whole request may take, connect included.
    public var timeout: Duration
    public var connectTimeout: Duration
    /// Bodies larger than this are cut and the request fails with `.responseTooLarge`.
    public var maxResponseBytes: Int
    /// A PEM file of extra trusted certificates (the simulator's CA). The system's trust store stays in use;
    /// verification of peer and host name is always on and cannot be turned off.
    public var extraCABundlePath: String?
    public var protocolPreference: ProtocolPreference
    /// Most connections to one host (0: no limit). With HTTP/2 one connection carries many requests; over
    /// HTTP/1.1 a connection carries one at a time, so fewer connections than `maxConcurrentRequests` queue
    /// the rest inside libcurl: the default is one per transfer in flight (at 64 connections for 128
    /// transfers, B1 over HTTP/1.1 ran at half its rate with a fifth more CPU per request).
    public var maxConnectionsPerHost: Int
    /// Most transfers in flight at once; further requests queue in the client. Keeps memory bounded and
    /// keeps HTTP/2 on few connections: at libcurl's per-connection stream limit, Debian 12's libcurl
    /// opens a new connection for every extra transfer instead of waiting for a free stream.
    public var maxConcurrentRequests: Int
    public var userAgent: String

    public init(
        timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10), maxResponseBytes: Int = 4 << 20,
        extraCABundlePath: String? = nil, protocolPreference: ProtocolPreference = .http2OverTLS,
        maxConnectionsPerHost: Int? = nil, maxConcurrentRequests: Int = 100, userAgent: String = "clawback"
    ) {
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.maxResponseBytes = maxResponseBytes
        self.extraCABundlePath = extraCABundlePath
        self.protocolPreference = protocolPreference
        self.maxConcurrentRequests = max(1, maxConcurrentRequests)
        self.maxConnectionsPerHost = maxConnectionsPerHost ?? self.maxConcurrentRequests
        self.userAgent = userAgent
    }
}

extension Duration {
    /// Whole milliseconds, at least 1, for libcurl's `_MS` options (where 0 would mean "no timeout").
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}
