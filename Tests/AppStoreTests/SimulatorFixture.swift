import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import HTTP
import Logging
import TestSupport

/// A simulator on a free loopback port with a small world of one app, and a client for it.
struct SimulatorFixture {
    static let bundleID = "com.studio.game"
    static let issuerID = "11111111-2222-3333-4444-555555555555"
    static let keyID = "TESTKEY001"

    let server: SimulatorServer
    let chain: SigningChain
    let key: P256.Signing.PrivateKey
    let http: HTTPClient

    var simulator: Simulator { server.simulator }
    var baseURL: String { "http://127.0.0.1:\(server.port)" }

    static func start(
        transactions: [TransactionRecord], faults: FaultPlan = .none, rateLimits: [String: Double]? = nil,
        extraApps: [AppRecord] = []
    ) async throws -> SimulatorFixture {
        let key = P256.Signing.PrivateKey()
        let chain = try SigningChain()
        let app = AppRecord(
            bundleId: bundleID, appAppleId: 6_450_000_001, issuerId: issuerID,
            keys: [.init(keyId: keyID, publicKey: key.publicKey.pemRepresentation)], sharedSecret: "s3cret")
        let simulator = Simulator(
            world: World(apps: [app] + extraApps, transactions: transactions), chain: chain, faults: faults,
            configuration: .init(rateLimits: rateLimits))
        let server = try await SimulatorServer.start(simulator: simulator, threads: 2)
        let http = try HTTPClient(configuration: .init(timeout: .seconds(5), protocolPreference: .http1))
        return SimulatorFixture(server: server, chain: chain, key: key, http: http)
    }

    func client(
        retry: RetryPolicy = RetryPolicy(baseDelay: .milliseconds(10), maxDelay: .milliseconds(100), generalErrorDelay: .milliseconds(50)),
        rates: RateLimiter.Rates = .init(overrides: [
            .transactionInfo: 10_000, .transactionHistory: 10_000, .refundHistory: 10_000,
            .notificationHistory: 10_000, .lookUpOrderID: 10_000,
        ]),
        key: P256.Signing.PrivateKey? = nil, bundleID: String = bundleID
    ) -> AppStoreServerAPIClient {
        let credentials = AppStoreCredentials(
            issuerID: Self.issuerID, keyID: Self.keyID, bundleID: bundleID, key: SigningKey(privateKey: key ?? self.key))
        return AppStoreServerAPIClient(
            http: http, tokens: BearerTokenProvider(credentials: credentials), limiter: RateLimiter(rates: rates),
            configuration: .init(baseURLs: [.production: baseURL, .sandbox: baseURL + "/sandbox"], retry: retry))
    }

    var verifier: SignedDataVerifier { SignedDataVerifier(trustedRoots: [chain.root]) }

    func stop() async {
        http.shutdown()
        await server.stop()
    }

    /// A simulator for the length of `body`, stopped (awaited) when the body returns or throws.
    static func with<T>(
        transactions: [TransactionRecord], faults: FaultPlan = .none, rateLimits: [String: Double]? = nil, extraApps: [AppRecord] = [],
        _ body: (SimulatorFixture) async throws -> T
    ) async throws -> T {
        try await scoped(
            try await start(transactions: transactions, faults: faults, rateLimits: rateLimits, extraApps: extraApps), stop: { await $0.stop() }, body
        )
    }

    /// A consumable purchase, `daysAgo` days back.
    static func purchase(
        _ id: String, daysAgo: Double = 20, customer: String? = nil, environment: String = "Production", product: String = "gems_600",
        refund: RefundRecord? = nil, type: String = "Consumable", orderID: String? = nil
    ) -> TransactionRecord {
        TransactionRecord(
            transactionId: id, customerId: customer, bundleId: bundleID, productId: product, type: type, quantity: 1,
            priceMilli: 4990, currency: "USD", storefront: "USA", environment: environment,
            purchaseDate: Date(timeIntervalSinceNow: -daysAgo * 86_400).roundedToMilliseconds, orderId: orderID, refund: refund)
    }
}

extension Date {
    var roundedToMilliseconds: Date { Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000) }
}
