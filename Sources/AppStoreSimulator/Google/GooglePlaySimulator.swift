public import Foundation
import GooglePlay
import Synchronization
import _CryptoExtras

/// Google Play as clawback and Google's own Python client see it: the OAuth token endpoint (a service
/// account's RS256 assertion for an access token) and the Orders API (`orders.get`, `orders.batchget`),
/// with Google's error bodies and its whole-batch failure. Served by the same process as the App Store
/// simulator: `POST /google/token`, `/androidpublisher/v3/applications/{package}/...`.
public final class GooglePlaySimulator: Sendable {
    public static let tokenPath = "/google/token"
    static let apiPrefix = "/androidpublisher/v3/applications/"
    static let tokenLifetime: TimeInterval = 3599

    private let state: Mutex<GooglePlayWorld>
    private let tokens = Mutex<[String: (account: String, expires: Date)]>([:])
    let clock: @Sendable () -> Date
    public let stats: SimulatorStats

    public init(world: GooglePlayWorld, stats: SimulatorStats = SimulatorStats(), clock: @escaping @Sendable () -> Date = Date.init) {
        state = Mutex(world)
        self.stats = stats
        self.clock = clock
    }

    public var world: GooglePlayWorld { state.withLock { $0 } }

    public func update(_ change: (inout GooglePlayWorld) -> Void) { state.withLock { change(&$0) } }

    /// Forgets every access token issued, as Google does when a key is rotated: the next call is a 401.
    public func revokeTokens() { tokens.withLock { $0.removeAll() } }

    /// Whether `request` is for Google's side of the simulator.
    public static func serves(_ path: String) -> Bool { path == tokenPath || path.hasPrefix(apiPrefix) }

    public func handle(_ request: SimulatorRequest) -> SimulatorReply {
        if request.path == Self.tokenPath {
            stats.count(endpoint: "google.token")
            return request.method == "POST" ? token(request) : Self.googleError(405, "METHOD_NOT_ALLOWED", "Use POST.")
        }
        let rest = request.path.dropFirst(Self.apiPrefix.count)
        guard let slash = rest.firstIndex(of: "/") else { return Self.googleError(404, "NOT_FOUND", "No such method.") }
        let packageName = SimulatorRequest.percentDecode(rest[..<slash])
        let method = rest[rest.index(after: slash)...]
        // Google's clients send a GET whose URL is too long as a POST with the query in a form body.
        var query = request.query
        var verb = request.method
        if verb == "POST", request.header("X-HTTP-Method-Override")?.uppercased() == "GET" {
            verb = "GET"
            query += SimulatorRequest.parseQuery(Substring(String(decoding: request.body, as: UTF8.self)))
        }
        let endpoint = method == "orders:batchGet" ? "google.orders.batchGet" : method.hasPrefix("orders/") ? "google.orders.get" : "google.unknown"
        stats.count(endpoint: endpoint)
        guard verb == "GET", endpoint != "google.unknown" else { return Self.googleError(404, "NOT_FOUND", "No such method.") }
        let world = self.world
        if let refusal = authorize(request, packageName: packageName, world: world) { return refusal }
        if endpoint == "google.orders.get" {
            let id = SimulatorRequest.percentDecode(method.dropFirst("orders/".count))
            guard let order = world.orders[id], order.packageName == packageName else {
                return Self.googleError(404, "NOT_FOUND", "Order not found.")
            }
            return Self.json(order.order)
        }
        let ids = query.filter { $0.0 == "orderIds" || $0.0 == "orderIds[]" }.map(\.1)
        guard (1...OrdersClient.maximumBatch).contains(ids.count) else {
            return Self.googleError(400, "INVALID_ARGUMENT", "There must be between 1 and 1000 (inclusive) order IDs per request.")
        }
        guard Set(ids).count == ids.count else { return Self.googleError(400, "INVALID_ARGUMENT", "The order IDs must be distinct.") }
        var orders: [Order] = []
        for id in ids {
            // One unknown or foreign id fails the whole request (Google's contract); which status Google
            // uses is not documented: the simulator answers 404 NOT_FOUND.
            guard let order = world.orders[id], order.packageName == packageName else {
                return Self.googleError(404, "NOT_FOUND", "Order not found.")
            }
            orders.append(order.order)
        }
        // Google does not promise the request's order: the simulator answers in reverse.
        struct Batch: Encodable { var orders: [Order] }
        return Self.json(Batch(orders: orders.reversed()))
    }

    private func authorize(_ request: SimulatorRequest, packageName: String, world: GooglePlayWorld) -> SimulatorReply? {
        let now = clock()
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer "),
            let holder = tokens.withLock({ $0[String(header.dropFirst("Bearer ".count))] }), holder.expires > now
        else {
            stats.count(status: 401)
            return Self.googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        }
        guard world.packages[packageName]?.serviceAccounts[holder.account] != nil else {
            stats.count(status: 403)
            return Self.googleError(403, "PERMISSION_DENIED", "The caller does not have permission")
        }
        return nil
    }

    /// The JWT bearer grant: the assertion must be RS256, signed by a service account some package lists,
    /// for Google's token audience and the androidpublisher scope, at most an hour long and current.
    private func token(_ request: SimulatorRequest) -> SimulatorReply {
        let form = Dictionary(
            SimulatorRequest.parseQuery(Substring(String(decoding: request.body, as: UTF8.self))), uniquingKeysWith: { first, _ in first })
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return Self.oauthError("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"] else { return Self.oauthError("invalid_request", "Missing required parameter: assertion") }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        struct Header: Decodable { var alg: String? }
        struct Claims: Decodable {
            var iss: String?
            var scope: String?
            var aud: String?
            var iat: Double?
            var exp: Double?
        }
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claimBytes = Self.base64URL(parts[1]),
            let signature = Self.base64URL(parts[2]), let header = try? JSONDecoder().decode(Header.self, from: headerBytes),
            let claims = try? JSONDecoder().decode(Claims.self, from: claimBytes)
        else { return Self.oauthError("invalid_grant", "Invalid JWT: cannot be decoded.") }
        guard header.alg == "RS256" else { return Self.oauthError("invalid_grant", "Invalid JWT: the algorithm must be RS256.") }
        let world = self.world
        guard let account = claims.iss, let pem = world.packages.values.lazy.compactMap({ $0.serviceAccounts[account] }).first,
            let key = try? _RSA.Signing.PublicKey(pemRepresentation: pem)
        else { return Self.oauthError("invalid_grant", "Invalid JWT Signature.") }
        let input = Data(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: input, padding: .insecurePKCS1v1_5) else {
            return Self.oauthError("invalid_grant", "Invalid JWT Signature.")
        }
        let now = clock().timeIntervalSince1970
        guard claims.aud == AccessTokenProvider.audience else { return Self.oauthError("invalid_grant", "Invalid JWT: Failed audience check.") }
        guard let iat = claims.iat, let exp = claims.exp, exp > iat, exp - iat <= 3600, iat <= now + 60, exp > now else {
            return Self.oauthError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        guard (claims.scope ?? "").split(separator: " ").contains(Substring(AccessTokenProvider.scope)) else {
            return Self.oauthError("invalid_scope", "The androidpublisher scope was not requested.")
        }
        let token = "ya29.sim-" + UUID().uuidString
        tokens.withLock { $0[token] = (account, clock() + Self.tokenLifetime) }
        let body = "{\"access_token\":\"\(token)\",\"expires_in\":\(Int(Self.tokenLifetime)),\"token_type\":\"Bearer\"}"
        return .json(200, Array(body.utf8))
    }

    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    static func json(_ value: some Encodable) -> SimulatorReply {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let body = try? encoder.encode(value) else { return googleError(500, "INTERNAL", "Internal error encountered.") }
        return .json(200, Array(body))
    }

    /// Google's error body (`google.rpc.Status` as JSON, with the legacy `errors` list).
    static func googleError(_ code: Int, _ status: String, _ message: String) -> SimulatorReply {
        let escaped = message.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        let body =
            "{\"error\":{\"code\":\(code),\"message\":\"\(escaped)\",\"status\":\"\(status)\","
            + "\"errors\":[{\"message\":\"\(escaped)\",\"domain\":\"global\",\"reason\":\"\(status.lowercased())\"}]}}"
        return .json(code, Array(body.utf8))
    }

    /// The token endpoint's error (RFC 6749 §5.2), answered 400 as Google's does.
    static func oauthError(_ error: String, _ description: String) -> SimulatorReply {
        .json(400, Array("{\"error\":\"\(error)\",\"error_description\":\"\(description)\"}".utf8))
    }
}
