public import HTTP

/// A Server API call that gave no usable answer. `description` names the endpoint and never the bearer
/// token; transaction ids appear, since operators need them.
public struct AppStoreAPIError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// Apple answered with an error status. `code` is the body's errorCode when there was one.
        case apple(status: Int, code: AppleErrorCode?, message: String?)
        /// 401: the bearer token was refused (key, issuer, key id or bundle id wrong; or clock skew).
        case unauthorized
        /// No HTTP answer at all.
        case transport(HTTPError)
        /// A 2xx whose body is not what Apple documents.
        case invalidResponse(String)
        /// The retry budget ran out; `last` is the last failure.
        case retriesExhausted(attempts: Int, last: String)
    }

    public let kind: Kind
    /// Which call failed, e.g. "Get Transaction Info".
    public let endpoint: String

    public init(_ kind: Kind, endpoint: String) {
        self.kind = kind
        self.endpoint = endpoint
    }

    /// Apple's error code, when Apple sent one.
    public var appleCode: AppleErrorCode? {
        if case .apple(_, let code, _) = kind { return code }
        return nil
    }

    /// 4040010: the transaction id does not exist in that environment.
    /// 4040010 TransactionIdNotFoundError as Apple documents it: with HTTP 404. The same code under any
    /// other status is not trusted to mean "Apple does not know this transaction".
    public var isTransactionNotFound: Bool {
        guard case .apple(404, .transactionIDNotFound?, _) = kind else { return false }
        return true
    }

    public var description: String {
        switch kind {
        case .apple(let status, let code, let message):
            "\(endpoint): Apple answered HTTP \(status)"
                + (code.map { " error \($0)" } ?? "") + (message.map { ": \($0)" } ?? "")
        case .unauthorized:
            "\(endpoint): Apple refused the bearer token (HTTP 401): check issuer id, key id, key file and bundle id"
        case .transport(let error): "\(endpoint): \(error)"
        case .invalidResponse(let detail): "\(endpoint): unexpected response: \(detail)"
        case .retriesExhausted(let attempts, let last): "\(endpoint): gave up after \(attempts) attempts; last: \(last)"
        }
    }
}
