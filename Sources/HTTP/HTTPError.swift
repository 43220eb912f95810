/// A request that produced no HTTP response, as one typed value.
///
/// `url` never carries the query string or user info, which may hold secrets; `description` is safe to log.
/// Equality is on `code` only.
public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case timedOut, couldNotConnect, tls, responseTooLarge, transport, cancelled, shutdown, invalidRequest
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The total timeout passed after the request had left (a connection was made).
        public static let timedOut = Code(.timedOut)
        /// Name resolution or the TCP connection failed, or no connection (TCP and TLS) was made within the
        /// timeout: the request never left.
        public static let couldNotConnect = Code(.couldNotConnect)
        /// The TLS handshake failed, including a certificate that is not trusted or does not match the host.
        public static let tls = Code(.tls)
        /// The response body was larger than the configured cap; the transfer was cut.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The connection broke or the peer spoke bad HTTP (reset, empty reply, HTTP/2 framing, ...).
        public static let transport = Code(.transport)
        /// The calling task was cancelled.
        public static let cancelled = Code(.cancelled)
        /// The client was shut down before the request finished.
        public static let shutdown = Code(.shutdown)
        /// libcurl refused the request's options (for example a malformed URL).
        public static let invalidRequest = Code(.invalidRequest)

        public var description: String { base.rawValue }
    }

    public var code: Code
    /// libcurl's CURLcode, as a number (0 when the failure did not come from libcurl).
    public var curlCode: Int
    /// libcurl's text for the code plus the details of its error buffer.
    public var message: String
    /// The request's URL without query string or credentials.
    public var url: String

    public init(_ code: Code, curlCode: Int = 0, message: String, url: String) {
        self.code = code
        self.curlCode = curlCode
        self.message = message
        self.url = HTTPError.redact(url)
    }

    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool { lhs.code == rhs.code }

    /// Whether trying again later could succeed: network trouble yes; a refused certificate, an oversized
    /// answer or a malformed request no.
    public var isTransient: Bool { code == .timedOut || code == .couldNotConnect || code == .transport }

    public var description: String {
        "HTTP request to \(url) failed (\(code)\(curlCode != 0 ? ", curl \(curlCode)" : "")): \(message)"
    }

    /// Drops `user:password@` and everything from `?` or `#`.
    static func redact(_ url: String) -> String {
        var text = Substring(url)
        if let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<cut] }
        if let schemeEnd = text.range(of: "://") {
            let authorityStart = schemeEnd.upperBound
            let authorityEnd = text[authorityStart...].firstIndex(of: "/") ?? text.endIndex
            if let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") {
                text = text[..<authorityStart] + text[text.index(after: at)...]
            }
        }
        return String(text)
    }
}
