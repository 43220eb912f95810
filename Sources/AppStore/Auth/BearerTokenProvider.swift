import Crypto
public import Foundation
import Locking

/// Who calls the App Store Server API: the In-App Purchase key and the app it speaks for.
public struct AppStoreCredentials: Sendable, CustomStringConvertible {
    /// Issuer id (a UUID) from App Store Connect's Keys page.
    public var issuerID: String
    /// The key's id, e.g. 2X9R4HXF34.
    public var keyID: String
    /// The app's bundle id (`bid`), case-sensitive.
    public var bundleID: String
    public var key: SigningKey

    public init(issuerID: String, keyID: String, bundleID: String, key: SigningKey) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.bundleID = bundleID
        self.key = key
    }

    public var description: String { "key \(keyID) of issuer \(issuerID) for \(bundleID)" }
}

/// Makes the ES256 bearer JWTs of the App Store Server API and reuses each until shortly before it
/// expires: signing per request would cost an ECDSA signature per grant for nothing (Apple allows reuse
/// until expiry).
public final class BearerTokenProvider: Sendable {
    public let credentials: AppStoreCredentials
    /// Lifetime of a token: Apple's libraries use 5 minutes; Apple refuses more than 60.
    public let lifetime: TimeInterval
    /// A token is replaced this long before it expires, so that one never expires in flight.
    public let renewalMargin: TimeInterval
    private let clock: @Sendable () -> Date
    private let cached = Locked<(token: String, expires: Date)?>(nil)

    public init(
        credentials: AppStoreCredentials, lifetime: TimeInterval = 300, renewalMargin: TimeInterval = 60,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.credentials = credentials
        self.lifetime = lifetime
        self.renewalMargin = renewalMargin
        self.clock = clock
    }

    /// A valid token, new or reused.
    public func token() throws -> String {
        let now = clock()
        if let current = cached.withLock({ $0 }), now < current.expires - renewalMargin { return current.token }
        let issuedAt = Int64(now.timeIntervalSince1970)
        let expires = issuedAt + Int64(lifetime)
        let token = try Self.sign(credentials: credentials, issuedAt: issuedAt, expires: expires)
        cached.withLock { $0 = (token, Date(timeIntervalSince1970: TimeInterval(expires))) }
        return token
    }

    /// Forgets the cached token (after a 401, in case the clock jumped).
    public func invalidate() { cached.withLock { $0 = nil } }

    struct Header: Encodable {
        let alg = "ES256"
        let kid: String
        let typ = "JWT"
    }

    struct Claims: Encodable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud = "appstoreconnect-v1"
        let bid: String
    }

    static func sign(credentials: AppStoreCredentials, issuedAt: Int64, expires: Int64) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let header = Base64.encodeURL(try encoder.encode(Header(kid: credentials.keyID)))
        let claims = Base64.encodeURL(
            try encoder.encode(Claims(iss: credentials.issuerID, iat: issuedAt, exp: expires, bid: credentials.bundleID)))
        let input = header + "." + claims
        // JWS wants the raw r||s form (64 bytes), not DER.
        let signature = try credentials.key.privateKey.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + Base64.encodeURL(signature)
    }
}
