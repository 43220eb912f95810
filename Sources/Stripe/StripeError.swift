/// Why a call to Stripe gave no usable answer. Only a 2xx with a body that decodes is an answer; every other
/// outcome is one of these, and none of them says anything about a payment.
public struct StripeError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The request never left (no connection, TLS): nothing reached Stripe.
        case unreached
        /// The connection broke or timed out after the request may have left.
        case transport
        /// Stripe answered with an error: its HTTP status and its error body's `type` and `code` (nil
        /// without Stripe's error body: a proxy, a wrong base URL).
        case refused(status: Int, type: String?, code: String?)
        /// A 2xx whose body is not what Stripe documents for the call.
        case malformed
        /// A list that did not end where its pages said it would (a page without an id to go on from).
        case incompleteList
    }

    public let kind: Kind
    public let message: String
    /// Stripe's `Stripe-Should-Retry` header on the answer, where it sent one.
    public let shouldRetry: Bool?

    public init(_ kind: Kind, _ message: String, shouldRetry: Bool? = nil) {
        self.kind = kind
        self.message = message
        self.shouldRetry = shouldRetry
    }

    /// Worth asking again with a pause: Stripe said so, or it is a rate limit (429), a conflict with a
    /// concurrent request (409), a server error (5xx) or the network, and Stripe did not say not to.
    public var isTransient: Bool {
        if let shouldRetry { return shouldRetry }
        switch kind {
        case .unreached, .transport: return true
        case .refused(let status, _, _): return status == 409 || status == 429 || status >= 500
        case .malformed, .incompleteList: return false
        }
    }

    /// Stripe's 404 `resource_missing`: it has no object of that id (for this key's account and mode).
    public var isMissingObject: Bool {
        if case .refused(404, _, "resource_missing") = kind { return true }
        return false
    }

    public var description: String { message }
}
