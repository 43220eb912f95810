import AppStore
public import Foundation
public import GooglePlay
import Locking
import _CryptoExtras

/// Google Play as clawback and Google's own Python client see it: the OAuth token endpoint (a service
/// account's RS256 assertion for an access token), the Orders API (`orders.get`, `orders.batchget`) and the
/// Voided Purchases feed, with Google's error bodies, its whole-batch failure, the feed's 30-day reach,
/// paging and quota. Served by the same process as the App Store simulator: `POST /google/token`,
/// `/androidpublisher/v3/applications/{package}/...`.
public final class GooglePlaySimulator: Sendable {
    public static let tokenPath = "/google/token"
    static let apiPrefix = "/androidpublisher/v3/applications/"
    static let tokenLifetime: TimeInterval = 3599

    private let state: Locked<GooglePlayWorld>
    private let tokens = Locked<[String: (account: String, scopes: Set<String>, expires: Date)]>([:])
    /// The answers `orders.reviewrefund` recorded, by pending refund token.
    let reviewAnswers = Locked<[String: ReceivedReviewAnswer]>([:])
    /// The Pub/Sub side: the subscriptions real-time developer notifications are pulled from.
    public let pubSub: PubSubSimulator
    let faults = Locked(GoogleFaults())
    let feedQuota = Locked<[String: [Date]]>([:])
    let clock: @Sendable () -> Date
    public let stats: SimulatorStats

    public init(world: GooglePlayWorld, stats: SimulatorStats = SimulatorStats(), clock: @escaping @Sendable () -> Date = Date.init) {
        state = Locked(world)
        self.stats = stats
        self.clock = clock
        pubSub = PubSubSimulator(clock: clock)
    }

    /// What `orders.reviewrefund` recorded, by pending refund token: the first answer and how many calls came.
    public var answeredReviews: [String: ReceivedReviewAnswer] { reviewAnswers.withLock { $0 } }

    /// Publishes `notification` to its app's notification topic, as Google Play does (nothing when the app
    /// has no topic). Returns the Pub/Sub message id.
    @discardableResult
    public func notify(_ notification: DeveloperNotification) -> String? {
        let world = self.world
        guard let package = notification.packageName, let topic = world.packages[package]?.notificationTopic,
            let data = try? JSONEncoder().encode(notification)
        else { return nil }
        return pubSub.publish(Array(data), topic: topic, world: world)
    }

    /// Publishes what Google would have published for the world's recent events, as the simulator starts: a
    /// chargeback review's notification for each review still within its 24 hours, a void's for each void
    /// recorded within Pub/Sub's retention (7 days), and one test notification per app with a topic.
    public func publishWorldNotifications() {
        let world = self.world
        let now = clock()
        for package in world.packages.values where package.notificationTopic != nil {
            notify(DeveloperNotification(packageName: package.packageName, eventTime: now, test: .init()))
        }
        for order in world.orders.values.sorted(by: { $0.orderId < $1.orderId }) {
            if let review = order.refundReview, review.notifiedAt + Self.reviewWindow > now {
                notify(
                    DeveloperNotification(
                        packageName: order.packageName, eventTime: review.notifiedAt,
                        pendingRefundReview: .init(pendingRefundToken: review.pendingRefundToken, orderId: order.orderId)))
            }
            for void in order.voids ?? [] where void.recordedAt > now - PubSubSimulator.retention {
                notify(
                    DeveloperNotification(
                        packageName: order.packageName, eventTime: void.recordedAt,
                        voidedPurchase: .init(purchaseToken: order.purchaseToken, orderId: order.orderId, refundType: void.quantity == nil ? 1 : 2)))
            }
        }
    }

    /// Publishes raw bytes as a notification of `packageName`'s topic: what a broken or foreign publisher sends.
    @discardableResult
    public func publishRaw(_ data: [UInt8], topicOf packageName: String) -> String? {
        let world = self.world
        guard let topic = world.packages[packageName]?.notificationTopic else { return nil }
        return pubSub.publish(data, topic: topic, world: world)
    }

    public var world: GooglePlayWorld { state.withLock { $0 } }

    public func update(_ change: (inout GooglePlayWorld) -> Void) { state.withLock { change(&$0) } }

    /// Forgets every access token issued, as Google does when a key is rotated: the next call is a 401.
    public func revokeTokens() { tokens.withLock { $0.removeAll() } }

    /// Misbehaviour for the next API calls (tests): see `GoogleFaults`.
    public func setFaults(_ faults: GoogleFaults) { self.faults.withLock { $0 = faults } }

    /// Whether `request` is for Google's side of the simulator.
    public static func serves(_ path: String) -> Bool {
        path == tokenPath || path.hasPrefix(apiPrefix) || path.hasPrefix(PubSubSimulator.pathPrefix)
    }

    public func handle(_ request: SimulatorRequest) -> SimulatorReply {
        let reply = answer(request)
        let latency = faults.withLock { $0.latencyMilliseconds }
        return latency > 0 && request.path != Self.tokenPath ? .delayed(milliseconds: latency, reply) : reply
    }

    private func answer(_ request: SimulatorRequest) -> SimulatorReply {
        if request.path == Self.tokenPath {
            stats.count(endpoint: "google.token")
            return request.method == "POST" ? token(request) : .respond(status: 405, headers: [], body: [])
        }
        if request.path.hasPrefix(PubSubSimulator.pathPrefix) { return pubSubCall(request) }
        let rest = request.path.dropFirst(Self.apiPrefix.count)
        guard let slash = rest.firstIndex(of: "/") else { return .respond(status: 404, headers: [], body: []) }
        let packageName = SimulatorRequest.percentDecode(rest[..<slash])
        let method = rest[rest.index(after: slash)...]
        // Google's clients send a GET whose URL is too long as a POST with the query in a form body.
        var query = request.query
        var verb = request.method
        if verb == "POST", request.header("X-HTTP-Method-Override")?.uppercased() == "GET" {
            stats.count(endpoint: "google.methodOverride")
            verb = "GET"
            query += SimulatorRequest.parseQuery(Substring(String(decoding: request.body, as: UTF8.self)))
        }
        let endpoint =
            switch method {
            case "orders:batchGet": "google.orders.batchGet"
            case _ where method.hasPrefix("orders/") && method.hasSuffix(":reviewrefund"): "google.orders.reviewrefund"
            case "purchases/voidedpurchases": "google.voidedPurchases"
            case _ where method.hasPrefix("orders/") && method.count > "orders/".count: "google.orders.get"
            case _ where method.hasPrefix("purchases/products/") && method.contains("/tokens/"): "google.products.get"
            default: "google.unknown"
            }
        stats.count(endpoint: endpoint)
        // An unknown path gets Google's front end's bare 404, which says nothing about any order.
        guard verb == (endpoint == "google.orders.reviewrefund" ? "POST" : "GET"), endpoint != "google.unknown" else {
            return .respond(status: 404, headers: [], body: [])
        }
        let world = self.world
        if let refusal = authorize(request, packageName: packageName, world: world, acting: endpoint == "google.orders.reviewrefund") {
            return refusal
        }
        if let status = faults.withLock({ $0.nextFailure() }), status != 200 {
            stats.count(status: status)
            return Self.googleError(status, status == 429 ? "RESOURCE_EXHAUSTED" : "UNAVAILABLE", "backendError", "Injected failure.")
        }
        switch endpoint {
        case "google.orders.reviewrefund":
            let id = SimulatorRequest.percentDecode(method.dropFirst("orders/".count).dropLast(":reviewrefund".count))
            let reply = reviewRefund(request, orderID: id, packageName: packageName, world: world)
            guard case .respond(200, _, _) = reply, faults.withLock({ $0.losesAnswer() }) else { return reply }
            stats.count(status: 502)
            return Self.googleError(502, "UNAVAILABLE", "backendError", "Injected failure after the answer was recorded.")
        case "google.orders.get":
            let id = SimulatorRequest.percentDecode(method.dropFirst("orders/".count))
            guard let order = world.orders[id], order.packageName == packageName else {
                return Self.googleError(404, "NOT_FOUND", "notFound", "Order not found.")
            }
            return Self.json(order.order)
        case "google.orders.batchGet":
            return batchGet(query.filter { $0.0 == "orderIds" }.map(\.1), packageName: packageName, world: world)
        case "google.products.get":
            return productPurchase(method, packageName: packageName, world: world)
        default:
            return voidedPurchases(query, packageName: packageName, world: world)
        }
    }

    /// `purchases.products.get` (`purchases/products/{productId}/tokens/{token}`): the purchase record of a
    /// token, as Google's `ProductPurchase` (int64 fields as JSON strings, as Google writes them). The
    /// refundable quantity counts what the order's voids took, and none once it is refunded whole; Google
    /// documents no purchase state for a refund, so a refunded purchase stays 0 (purchased).
    private func productPurchase(_ method: Substring, packageName: String, world: GooglePlayWorld) -> SimulatorReply {
        let parts = method.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[3] == "tokens" else { return .respond(status: 404, headers: [], body: []) }
        let productID = SimulatorRequest.percentDecode(parts[2])
        let token = SimulatorRequest.percentDecode(parts[4])
        guard let order = world.orders.values.first(where: { $0.purchaseToken == token && $0.packageName == packageName }),
            order.productId == productID
        else { return Self.googleError(404, "NOT_FOUND", "purchaseTokenNotFound", "The purchase token was not found.") }
        let voided = order.voids?.reduce(0) { $0 + Int($1.quantity ?? 0) } ?? 0
        let refundable = order.state == "REFUNDED" ? 0 : max(0, order.quantity - voided)
        struct ProductPurchase: Encodable {
            var kind = "androidpublisher#productPurchase"
            var purchaseTimeMillis: String
            var purchaseState: Int
            var consumptionState = 1
            var orderId: String
            var acknowledgementState = 1
            var productId: String
            var quantity: Int
            var refundableQuantity: Int
            var regionCode = "US"
        }
        let state = ["CANCELED": 1, "PENDING": 2][order.state] ?? 0
        return Self.json(
            ProductPurchase(
                purchaseTimeMillis: String(Int64((order.purchaseTime.timeIntervalSince1970 * 1000).rounded())), purchaseState: state,
                orderId: order.orderId, productId: order.productId, quantity: order.quantity, refundableQuantity: refundable))
    }

    private func batchGet(_ ids: [String], packageName: String, world: GooglePlayWorld) -> SimulatorReply {
        guard (1...OrdersClient.maximumBatch).contains(ids.count) else {
            return Self.googleError(400, "INVALID_ARGUMENT", "invalidValue", "There must be between 1 and 1000 (inclusive) order IDs per request.")
        }
        guard Set(ids).count == ids.count else { return Self.googleError(400, "INVALID_ARGUMENT", "invalidValue", "The order IDs must be distinct.") }
        var orders: [Order] = []
        for id in ids {
            // One unknown or foreign id fails the whole request (Google's contract); which status Google
            // uses is not documented: the simulator answers 404 notFound.
            guard let order = world.orders[id], order.packageName == packageName else {
                return Self.googleError(404, "NOT_FOUND", "notFound", "Order not found.")
            }
            orders.append(order.order)
        }
        switch faults.withLock({ $0.takeBatchFault() }) {
        case .omitOne: orders.removeFirst()
        case .duplicateDifferent:
            var twin = orders[0]
            twin.state = twin.state == "REFUNDED" ? "PROCESSED" : "REFUNDED"
            orders.append(twin)
        case .malformed: return .json(200, Array(#"{"orders": [{"orderId": 7}]"#.utf8))
        case nil: break
        }
        // Google does not promise the request's order: the simulator answers in reverse.
        struct Batch: Encodable { var orders: [Order] }
        return Self.json(Batch(orders: orders.reversed()))
    }

    /// The account must hold a token this simulator issued, and the package must list it. An account the
    /// Play Console has not granted the app is 401 `permissionDenied`, as Google's Play Developer API answers.
    /// `acting`: the call acts on an order (`orders.reviewrefund`), which an account that may only view orders
    /// is refused.
    private func authorize(_ request: SimulatorRequest, packageName: String, world: GooglePlayWorld, acting: Bool) -> SimulatorReply? {
        let holder: (account: String, scopes: Set<String>, expires: Date)
        switch bearer(request) {
        case .success(let found): holder = found
        case .failure(let refusal): return refusal.reply
        }
        guard holder.scopes.contains(AccessTokenProvider.scope) else {
            stats.count(status: 403)
            return Self.googleError(403, "PERMISSION_DENIED", "insufficientPermissions", "Request had insufficient authentication scopes.")
        }
        guard let package = world.packages[packageName] else {
            stats.count(status: 404)
            return Self.googleError(404, nil, "applicationNotFound", "No application was found for the given package name.")
        }
        guard package.serviceAccounts[holder.account] != nil, !(acting && package.viewOnlyAccounts?.contains(holder.account) == true) else {
            stats.count(status: 401)
            return Self.googleError(401, nil, "permissionDenied", "The current user has insufficient permissions to perform the requested operation.")
        }
        return nil
    }

    /// A refusal as a reply, in a type `Result` can carry.
    struct Refusal: Error {
        var reply: SimulatorReply
    }

    /// The holder of the request's bearer token, if this simulator issued it and it is current.
    private func bearer(_ request: SimulatorRequest) -> Result<(account: String, scopes: Set<String>, expires: Date), Refusal> {
        let now = clock()
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer "),
            let holder = tokens.withLock({ $0[String(header.dropFirst("Bearer ".count))] }), holder.expires > now
        else {
            stats.count(status: 401)
            return .failure(Refusal(reply: Self.googleError(401, "UNAUTHENTICATED", "authError", "Request had invalid authentication credentials.")))
        }
        return .success(holder)
    }

    /// `POST /v1/projects/{project}/subscriptions/{subscription}:{verb}`, for a token with Pub/Sub's scope.
    private func pubSubCall(_ request: SimulatorRequest) -> SimulatorReply {
        let name = request.path.dropFirst("/v1/".count)
        guard let colon = name.lastIndex(of: ":"), name[..<colon].split(separator: "/", omittingEmptySubsequences: false).count == 4,
            name.split(separator: "/")[2] == "subscriptions"
        else {
            stats.count(endpoint: "google.pubsub.unknown")
            return .respond(status: 404, headers: [], body: [])
        }
        let verb = String(name[name.index(after: colon)...])
        stats.count(endpoint: "google.pubsub." + verb)
        let holder: (account: String, scopes: Set<String>, expires: Date)
        switch bearer(request) {
        case .success(let found): holder = found
        case .failure(let refusal): return refusal.reply
        }
        guard !holder.scopes.isDisjoint(with: [PubSubScope.pubsub, PubSubScope.cloudPlatform]) else {
            stats.count(status: 403)
            return Self.googleError(403, "PERMISSION_DENIED", "insufficientPermissions", "Request had insufficient authentication scopes.")
        }
        return pubSub.handle(request, subscription: String(name[..<colon]), verb: verb, account: holder.account, world: world)
    }

    /// The JWT bearer grant: a form post whose assertion is RS256, signed by a service account some package
    /// lists, for Google's token audience and the androidpublisher or Pub/Sub scope (a token carries the scopes
    /// asked, and each API checks its own), at most an hour long and current.
    private func token(_ request: SimulatorRequest) -> SimulatorReply {
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            return Self.oauthError("invalid_request", "Content-Type must be application/x-www-form-urlencoded.")
        }
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
        guard parts.count == 3, let headerBytes = Base64.decodeURL(parts[0]), let claimBytes = Base64.decodeURL(parts[1]),
            let signature = Base64.decodeURL(parts[2]), let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes))
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
        let now = clock()
        guard claims.aud == AccessTokenProvider.audience else { return Self.oauthError("invalid_grant", "Invalid JWT: Failed audience check.") }
        guard let iat = claims.iat, let exp = claims.exp, exp > iat, exp - iat <= 3600, iat <= now.timeIntervalSince1970 + 60,
            exp > now.timeIntervalSince1970
        else {
            return Self.oauthError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        let scopes = Set((claims.scope ?? "").split(separator: " ").map(String.init))
        guard !scopes.isDisjoint(with: [AccessTokenProvider.scope, PubSubScope.pubsub, PubSubScope.cloudPlatform]) else {
            return Self.oauthError("invalid_scope", "No scope this simulator serves was requested.")
        }
        let token = "ya29.sim-" + UUID().uuidString
        tokens.withLock { tokens in
            tokens = tokens.filter { $0.value.expires > now }
            tokens[token] = (account, scopes, now + Self.tokenLifetime)
        }
        let body = "{\"access_token\":\"\(token)\",\"expires_in\":\(Int(Self.tokenLifetime)),\"token_type\":\"Bearer\"}"
        return .json(200, Array(body.utf8))
    }

    static func json(_ value: some Encodable) -> SimulatorReply {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let body = try? encoder.encode(value) else { return googleError(500, "INTERNAL", "backendError", "Internal error encountered.") }
        return .json(200, Array(body))
    }

    /// Google's error body: `code`, `message`, the canonical `status` (absent from some of the Play Developer
    /// API's own errors) and the legacy `errors` list with its `reason`.
    static func googleError(_ code: Int, _ status: String?, _ reason: String, _ message: String) -> SimulatorReply {
        struct Body: Encodable {
            struct Detail: Encodable {
                var message: String
                var domain: String
                var reason: String
            }
            struct Inner: Encodable {
                var code: Int
                var message: String
                var status: String?
                var errors: [Detail]
            }
            var error: Inner
        }
        let domain = status == nil ? "androidpublisher" : "global"
        let body = Body(error: .init(code: code, message: message, status: status, errors: [.init(message: message, domain: domain, reason: reason)]))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return .json(code, Array((try? encoder.encode(body)) ?? Data()))
    }

    /// The token endpoint's error (RFC 6749 §5.2), answered 400 as Google's does.
    static func oauthError(_ error: String, _ description: String) -> SimulatorReply {
        .json(400, Array("{\"error\":\"\(error)\",\"error_description\":\"\(description)\"}".utf8))
    }
}

/// What Google's side does wrong on purpose, for tests: the next calls fail with a status, or the next batch
/// answer leaves an order out, holds an order twice with different states, or is not Google's JSON.
public struct GoogleFaults: Sendable {
    public enum BatchFault: Sendable { case omitOne, duplicateDifferent, malformed }

    public var failures: [Int]
    public var batchFault: BatchFault?
    /// Every API answer this late (not the token's): a slower Google, for tests that must catch a run mid-way.
    public var latencyMilliseconds: Int
    /// The voids feed hands out one page token for ever, as a broken paging would: a client must stop.
    public var endlessFeed = false

    /// After `failures`, this share of API calls fails at random (seeded), half 500 and half 503.
    public var failureShare: Double
    /// `orders.reviewrefund` calls whose answer Google records and whose reply is then lost (a 502 from the
    /// front end, as a connection cut after the call was taken looks to the caller): the next this many, then
    /// this share at random.
    public var lostAnswers: Int
    public var lostAnswerShare: Double
    private var random = SeededGenerator(seed: 0x6006_FA17)

    /// `failures`: the statuses of the next API calls, one each, in order (500, 503, 429 ...; 200 answers).
    public init(
        failures: [Int] = [], batchFault: BatchFault? = nil, latencyMilliseconds: Int = 0, failureShare: Double = 0, lostAnswers: Int = 0,
        lostAnswerShare: Double = 0
    ) {
        self.lostAnswers = lostAnswers
        self.lostAnswerShare = lostAnswerShare
        self.failures = failures
        self.batchFault = batchFault
        self.latencyMilliseconds = latencyMilliseconds
        self.failureShare = failureShare
    }

    mutating func nextFailure() -> Int? {
        if !failures.isEmpty { return failures.removeFirst() }
        guard failureShare > 0, Double.random(in: 0..<1, using: &random) < failureShare else { return nil }
        return Bool.random(using: &random) ? 500 : 503
    }

    /// Whether the reply to an answer just recorded is lost.
    mutating func losesAnswer() -> Bool {
        if lostAnswers > 0 {
            lostAnswers -= 1
            return true
        }
        return lostAnswerShare > 0 && Double.random(in: 0..<1, using: &random) < lostAnswerShare
    }

    mutating func takeBatchFault() -> BatchFault? {
        defer { batchFault = nil }
        return batchFault
    }
}
