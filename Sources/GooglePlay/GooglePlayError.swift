/// What went wrong talking to Google Play, and where. None of these is a statement about a purchase: a grant
/// whose order could not be asked stays unverified (fail closed).
public struct GooglePlayError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The service account's key file cannot be used.
        case badKeyFile
        /// Google's token endpoint refused the service account's assertion, or answered without a token.
        case tokenRefused
        /// The connection broke or timed out: the request may or may not have reached Google.
        case transport
        /// The request never left: no connection could be made, or TLS was refused.
        case unreached
        /// Google answered with an error status (its `error.status` and `code` in the message).
        case refused(status: Int, reason: String?)
        /// A 2xx answer that is not the JSON Google's contract describes.
        case malformedAnswer
        /// Nothing was sent: the run's call budget is spent (`CallAllowance`).
        case budgetSpent
        /// Google answered, but with more than the client takes for this call (its cap): nothing was read.
        case answerTooLarge
    }

    public let kind: Kind
    public let message: String
    /// The request (sent or not) waited past the client's timeout.
    public let timedOut: Bool

    public init(_ kind: Kind, _ message: String, timedOut: Bool = false) {
        self.kind = kind
        self.message = message
        self.timedOut = timedOut
    }

    public var description: String { message }

    /// Worth asking again later: the network, 408, 429, 5xx, 409 (`concurrentUpdate`) and a 403 whose reason
    /// is a rate limit (`userRateLimitExceeded`, `rateLimitExceeded`), as Google's pages and client say.
    public var isTransient: Bool {
        switch kind {
        case .transport, .unreached: true
        case .refused(let status, _): status == 408 || status == 409 || status >= 500 || isRateLimit
        case .badKeyFile, .tokenRefused, .malformedAnswer, .budgetSpent, .answerTooLarge: false
        }
    }

    /// Google refused for a rate limit: 429, or 403 with a rate-limit reason.
    public var isRateLimit: Bool {
        guard case .refused(let status, let reason) = kind else { return false }
        return status == 429 || (status == 403 && (reason ?? "").lowercased().contains("ratelimitexceeded"))
    }
}
