import AppStoreSimulator
import Foundation
import GooglePlay
import HTTP
import TestSupport
import _CryptoExtras

/// The Google Play module's clients against the simulator (TestSupport's `GoogleSimulator`) with a Google
/// world, a service account it knows, and an HTTP client.
struct GoogleClientFixture {
    static let packageName = "com.studio.game"
    static let account = "clawback@studio-project.iam.gserviceaccount.com"
    static var key: _RSA.Signing.PrivateKey { GoogleSimulator.key }

    let server: SimulatorServer
    let http: HTTPClient

    var google: GooglePlaySimulator {
        // swift-format-ignore: NeverForceUnwrap
        server.simulator.google!  // started with a Google world
    }
    var baseURL: String { "http://127.0.0.1:\(server.port)" }

    /// The fixture app's notification topic and the subscription the fixture's account may pull from.
    static let topic = "projects/studio-project/topics/play-notifications"
    static let subscription = "projects/studio-project/subscriptions/clawback"

    /// `clock`: the simulator's (tokens, leases, deadlines), when a test moves time.
    static func with<T>(
        orders: [GoogleOrderRecord], extraPackages: [GooglePackageRecord] = [], subscriptions: [GoogleSubscriptionRecord]? = nil,
        clock: Clock? = nil, _ body: (GoogleClientFixture) async throws -> T
    ) async throws -> T {
        let package = GooglePackageRecord(
            packageName: packageName, serviceAccounts: [account: key.publicKey.pemRepresentation], notificationTopic: topic)
        var now: (@Sendable () -> Date)?
        if let clock { now = { clock.now } }
        let server = try await GoogleSimulator.start(
            GooglePlayWorld(
                packages: [package] + extraPackages, orders: orders,
                subscriptions: subscriptions ?? [GoogleSubscriptionRecord(name: subscription, topic: topic, subscribers: [account])]),
            clock: now)
        let http = try HTTPClient(configuration: .init(timeout: .seconds(10), protocolPreference: .http1))
        return try await scoped(GoogleClientFixture(server: server, http: http), stop: { await $0.stop() }, body)
    }

    /// A simulator without a Google world, and a client.
    static func withoutGoogle<T>(_ body: (String, HTTPClient) async throws -> T) async throws -> T {
        let server = try await SimulatorServer.start(
            simulator: Simulator(world: World(apps: [], transactions: []), chain: try SigningChain()), threads: 2)
        let http = try HTTPClient(configuration: .init(timeout: .seconds(10), protocolPreference: .http1))
        @Sendable func stop(_ resources: (SimulatorServer, HTTPClient)) async {
            resources.1.shutdown()
            await resources.0.stop()
        }
        return try await scoped((server, http), stop: stop) { try await body("http://127.0.0.1:\($0.0.port)", $0.1) }
    }

    static func keyFile(email: String = account, key: _RSA.Signing.PrivateKey = key, tokenBase: String) throws -> ServiceAccountKey {
        try ServiceAccountKey(
            json: GoogleSimulator.keyJSON(email: email, key: key, tokenURI: tokenBase + GooglePlaySimulator.tokenPath), source: "test key")
    }

    func keyFile(email: String = account, key: _RSA.Signing.PrivateKey = key) throws -> ServiceAccountKey {
        try Self.keyFile(email: email, key: key, tokenBase: baseURL)
    }

    func orders(key: ServiceAccountKey? = nil, packageName: String = packageName) throws -> OrdersClient {
        OrdersClient(
            packageName: packageName, baseURL: baseURL, tokens: AccessTokenProvider(key: try key ?? keyFile(), http: http), http: http,
            retries: 0)
    }

    /// A Pub/Sub client for the fixture's subscription, with a token for Pub/Sub's scope.
    func pubSub(subscription: String = subscription, scopes: String = PubSubScope.pubsub) throws -> PubSubClient {
        PubSubClient(
            subscription: subscription, baseURL: baseURL, tokens: AccessTokenProvider(key: try keyFile(), http: http, scopes: scopes), http: http,
            retries: 0)
    }

    func requests(_ endpoint: String) -> Int { server.simulator.stats.snapshot["requests." + endpoint] ?? 0 }

    func stop() async {
        http.shutdown()
        await server.stop()
    }

    /// An order of the fixture's package, bought at `day` of October 2026.
    static func order(_ number: Int, state: String = "PROCESSED", packageName: String = packageName) -> GoogleOrderRecord {
        let bought = Date(timeIntervalSince1970: 1_790_000_000 + Double(number) * 60)
        var record = GoogleOrderRecord(
            orderId: "GPA.3300-\(String(format: "%04d", number % 10_000))-\(String(format: "%04d", number / 10_000))-12345",
            packageName: packageName, purchaseToken: "token-\(number)", productId: "gems_600", quantity: 1 + number % 3, priceMilli: 4_990,
            currency: "EUR", purchaseTime: bought, state: state)
        switch state {
        case "REFUNDED": record.refund = .init(date: bought + 86_400, reason: number % 2 == 0 ? "CHARGEBACK" : "OTHER", amountMilli: 4_990)
        case "PARTIALLY_REFUNDED":
            record.partialRefunds = [
                .init(date: bought + 3_600, amountMilli: 1_000, processed: true), .init(date: bought + 7_200, amountMilli: 990, processed: true),
            ]
        default: break
        }
        return record
    }
}
