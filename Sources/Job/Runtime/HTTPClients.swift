public import HTTP

/// How every command starts an HTTP client: one way, whatever it talks to (a store, Pub/Sub, a bucket), each
/// caller giving its service's timeout; every client names this build in its User-Agent, and a client that
/// cannot start is one typed failure naming what it was for.
public enum HTTPClients {
    /// libcurl could not set a client up (no memory, an unreadable extra CA file).
    public struct StartFailure: Error, Sendable, CustomStringConvertible {
        public let purpose: String
        public let cause: HTTPError
        public var description: String { "cannot start the HTTP client for \(purpose): \(cause)" }
    }

    public static func start(
        for purpose: String, timeout: Duration, extraCABundlePath: String? = nil, maxConcurrentRequests: Int = 100, http1Only: Bool = false
    ) throws(StartFailure) -> HTTPClient {
        do {
            return try HTTPClient(
                configuration: .init(
                    timeout: timeout, extraCABundlePath: extraCABundlePath, protocolPreference: http1Only ? .http1 : .http2OverTLS,
                    maxConcurrentRequests: maxConcurrentRequests, userAgent: "clawback/\(BuildInfo.version)"))
        } catch {
            throw StartFailure(purpose: purpose, cause: error)
        }
    }
}
