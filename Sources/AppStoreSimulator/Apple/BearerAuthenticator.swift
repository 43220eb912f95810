import AppStore
import Crypto
import Foundation
import Locking

/// Checks bearer JWTs the way the App Store Server API does: ES256 over a known key id, `iss` the app's
/// issuer, `aud` appstoreconnect-v1, `bid` an app of the world, `exp` not past and at most 60 minutes after
/// `iat` (`iat` is optional: Apple's Python library sends none). Anything else is 401.
final class BearerAuthenticator: Sendable {
    struct Accepted: Sendable {
        let bundleID: String
        let expires: Date
    }

    private struct Header: Decodable {
        let alg: String?
        let kid: String?
    }

    private struct Claims: Decodable {
        let iss: String?
        let iat: Double?
        let exp: Double?
        let aud: String?
        let bid: String?
    }

    /// Verified tokens, so that a client reusing its token (as it should) costs one ECDSA verification.
    private let verified = Locked<[String: Accepted]>([:])

    func authenticate(_ authorization: String?, world: World, now: Date) -> Accepted? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return nil }
        let token = String(authorization.dropFirst(7))
        if let known = verified.withLock({ $0[token] }) {
            return known.expires > now && world.apps[known.bundleID] != nil ? known : nil
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64.decodeURL(parts[0]), let claimBytes = Base64.decodeURL(parts[1]),
            let signatureBytes = Base64.decodeURL(parts[2]),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes)),
            header.alg == "ES256", let keyID = header.kid, claims.aud == "appstoreconnect-v1",
            let bundleID = claims.bid, let app = world.apps[bundleID], claims.iss == app.issuerId,
            let expires = claims.exp, expires > now.timeIntervalSince1970,
            expires - (claims.iat ?? now.timeIntervalSince1970) <= 3600,
            let keyPEM = app.keys.first(where: { $0.keyId == keyID })?.publicKey,
            let key = try? P256.Signing.PublicKey(pemRepresentation: keyPEM),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8))
        else { return nil }
        let accepted = Accepted(bundleID: bundleID, expires: Date(timeIntervalSince1970: expires))
        verified.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache[token] = accepted
        }
        return accepted
    }
}
