public import Foundation
public import HTTP
import Locking
import _CryptoExtras

/// OAuth 2.0 access tokens for a service account (Google's "JWT bearer" grant): an RS256-signed assertion
/// (`iss` the account, `scope` androidpublisher unless told, `aud` Google's token endpoint, at most an hour long) posted
/// to the key's `token_uri`, the token kept until five minutes before it expires.
public final class AccessTokenProvider: Sendable {
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// The assertion's audience, whatever the key's `token_uri` (Google's library does the same).
    public static let audience = "https://oauth2.googleapis.com/token"
    static let assertionLifetime: TimeInterval = 3600
    static let renewalMargin: TimeInterval = 300

    public let key: ServiceAccountKey
    /// The scopes the tokens are for, space-separated as OAuth writes them.
    public let scopes: String
    let http: HTTPClient
    let clock: @Sendable () -> Date
    private let cached = Locked<(token: String, expires: Date)?>(nil)

    public init(key: ServiceAccountKey, http: HTTPClient, scopes: String = scope, clock: @escaping @Sendable () -> Date = Date.init) {
        self.key = key
        self.http = http
        self.scopes = scopes
        self.clock = clock
    }

    /// A token good for at least five more minutes.
    public func token() async throws(GooglePlayError) -> String {
        let now = clock()
        if let current = cached.withLock({ $0 }), now < current.expires - Self.renewalMargin { return current.token }
        let body =
            "grant_type=" + URLEncoding.unreserved("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion="
            + URLEncoding.unreserved(try assertion(now: now))
        let response: HTTPResponse
        do {
            response = try await http.send(
                HTTPRequest(
                    method: .post, url: key.tokenURI, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                    body: Array(body.utf8)))
        } catch {
            throw GooglePlayError(.transport, "the token request to \(key.tokenURI) failed: \(error)")
        }
        struct Answer: Decodable {
            var accessToken: String?
            var expiresIn: Seconds?
            var error: String?
            var errorDescription: String?

            enum CodingKeys: String, CodingKey {
                case accessToken = "access_token"
                case expiresIn = "expires_in"
                case error
                case errorDescription = "error_description"
            }
        }
        let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body))
        guard (200..<300).contains(response.status) else {
            let reason = [answer?.error, answer?.errorDescription].compactMap { $0 }.joined(separator: ": ")
            let message =
                "\(key.tokenURI) refused the token request for \(key.clientEmail) (HTTP \(response.status)\(reason.isEmpty ? "" : ", \(reason)"))"
            // Google's endpoint is busy, not refusing: its own library asks again on these.
            let busy =
                [408, 429].contains(response.status) || response.status >= 500
                || ["internal_failure", "server_error", "temporarily_unavailable"].contains(answer?.error ?? "")
            throw GooglePlayError(
                busy ? .refused(status: response.status >= 500 ? response.status : 503, reason: answer?.error) : .tokenRefused, message)
        }
        guard let token = answer?.accessToken, !token.isEmpty else {
            throw GooglePlayError(.tokenRefused, "\(key.tokenURI) answered without an access_token for \(key.clientEmail)")
        }
        // A lifetime that is missing or makes no sense is not trusted: the token serves this call only.
        if let lifetime = answer?.expiresIn?.value, lifetime.isFinite, lifetime > Self.renewalMargin, lifetime <= 86_400 {
            cached.withLock { $0 = (token, now + lifetime) }
        } else {
            cached.withLock { $0 = nil }
        }
        return token
    }

    /// Forgets the token (after a 401, as Google's library refreshes on one).
    public func invalidate() { cached.withLock { $0 = nil } }

    /// The signed assertion: `base64url(header).base64url(claims).base64url(RSASSA-PKCS1-v1_5 SHA-256)`.
    func assertion(now: Date) throws(GooglePlayError) -> String {
        var header: [String: String] = ["alg": "RS256", "typ": "JWT"]
        if let kid = key.privateKeyID { header["kid"] = kid }
        let issued = Int64(now.timeIntervalSince1970)
        let claims: [String: Any] = [
            "iss": key.clientEmail, "scope": scopes, "aud": Self.audience, "iat": issued,
            "exp": issued + Int64(Self.assertionLifetime),
        ]
        do {
            let input =
                Self.base64URL(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])) + "."
                + Self.base64URL(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
            let signature = try key.privateKey.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
            return input + "." + Self.base64URL(signature.rawRepresentation)
        } catch {
            throw GooglePlayError(.badKeyFile, "cannot sign a token request with the key of \(key.clientEmail): \(error)")
        }
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// `expires_in`, a number of seconds that Google's library also accepts as a string.
struct Seconds: Decodable {
    let value: TimeInterval

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            value = number
        } else if let text = try? container.decode(String.self), let number = Double(text) {
            value = number
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expires_in is neither a number nor a numeric string")
        }
    }
}
