import AppStore
import AppStoreDriver
import AppStoreSimulator
import Crypto
import Foundation
import GooglePlayDriver
import HTTP
import Job
import Logging
import Postgres
import Reconciliation
import Storage
import TestSupport

/// A migrated scratch database, an in-process simulator, and a way to run the job against both.
final class JobFixture: @unchecked Sendable {
    static let bundleID = "com.studio.game"
    static let issuerID = "11111111-2222-3333-4444-555555555555"
    static let keyID = "TESTKEY001"

    let database: String
    let server: SimulatorServer
    let http: HTTPClient
    let key = P256.Signing.PrivateKey()
    let window: ReconciliationWindow
    let connection: PostgresConnection

    /// Grants fall in the window; Apple's records are built from them unless overridden.
    init(database: String, transactions: [TransactionRecord]) async throws {
        self.database = database
        let now = Date()
        window = try ReconciliationWindow(start: now - 86_400 * 60, end: now + 60)
        connection = try TestPostgres.connect(database: database)
        try Migrator().migrate(on: connection.storage)
        let app = AppRecord(
            bundleId: Self.bundleID, appAppleId: 1, issuerId: Self.issuerID,
            keys: [.init(keyId: Self.keyID, publicKey: key.publicKey.pemRepresentation)])
        let simulator = Simulator(
            world: World(apps: [app], transactions: transactions), chain: try SigningChain(),
            configuration: .init(rateLimits: nil))
        server = try await SimulatorServer.start(simulator: simulator, threads: 1)
        http = try HTTPClient(configuration: .init(timeout: .seconds(5), protocolPreference: .http1))
    }

    /// A fixture for `body` only: its simulator and HTTP client stop however `body` ends, a failed
    /// expectation or a thrown error included.
    static func with<T>(database: String, transactions: [TransactionRecord], _ body: (JobFixture) async throws -> T) async throws -> T {
        try await scoped(try await JobFixture(database: database, transactions: transactions), stop: { await $0.shutdown() }, body)
    }

    func shutdown() async {
        http.shutdown()
        await server.stop()
    }

    var simulator: Simulator { server.simulator }

    /// The grants table gets one grant per record (with the record's product and quantity unless told otherwise).
    func grant(_ records: [TransactionRecord], units: Int64 = 600, overrides: [String: (inout GeneratedGrant) -> Void] = [:]) throws {
        var lines = Data()
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        for record in records {
            var grant = GeneratedGrant(
                transaction_id: record.transactionId, original_transaction_id: record.originalTransactionId, bundle_id: record.bundleId,
                product_id: record.productId, environment: record.environment, player_id: "player-\(record.customer)", app_account_token: nil,
                quantity: record.quantity, units_granted: units * Int64(record.quantity), price_milli: record.priceMilli,
                currency: record.currency, storefront: record.storefront, purchased_at: record.purchaseDate)
            overrides[record.transactionId]?(&grant)
            lines += try encoder.encode(grant) + Data("\n".utf8)
        }
        let outcome = try GrantImport.importJSONLines(lines, skipInvalid: false, on: connection.storage)
        precondition(outcome.invalid.isEmpty, "fixture grants invalid: \(outcome.invalid)")
    }

    func apps(bundles: [String] = [bundleID]) -> AppleApps {
        var clients: [String: AppStoreServerAPIClient] = [:]
        let base = "http://127.0.0.1:\(server.port)"
        for bundle in bundles {
            let credentials = AppStoreCredentials(issuerID: Self.issuerID, keyID: Self.keyID, bundleID: bundle, key: SigningKey(privateKey: key))
            clients[bundle] = AppStoreServerAPIClient(
                http: http, tokens: BearerTokenProvider(credentials: credentials),
                limiter: RateLimiter(rates: .init(overrides: [.transactionInfo: 5000])),
                configuration: .init(
                    baseURLs: [.production: base, .sandbox: base + "/sandbox"],
                    retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5))))
        }
        let receipts = VerifyReceiptClient(
            http: http, productionURL: base + "/verifyReceipt", sandboxURL: base + "/sandbox/verifyReceipt",
            retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5)))
        return AppleApps(clients: clients, verifier: SignedDataVerifier(trustedRoots: [simulator.chain.root]), receiptClient: receipts)
    }

    func scope(dryRun: Bool = false, shard: (Int, Int) = (0, 1), player: String? = nil) -> RunScope {
        RunScope(
            selection: GrantSelection(window: window, playerID: player, shardIndex: shard.0, shardCount: shard.1),
            strategy: .transactionInfo, dryRun: dryRun)
    }

    func run(
        _ scope: RunScope? = nil, apps: AppleApps? = nil, gateway: (any StoreGateway)? = nil, stop: StopSignal = StopSignal(),
        resume: Int64? = nil, policy: ReconciliationPolicy = .init(), batchSize: Int = 7
    ) async throws -> CheckingOutcome {
        let session = try DatabaseSession(try TestPostgres.configuration(database: database).storage)
        let request = CheckingRequest(
            scope: scope ?? self.scope(), origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []),
            resumeRunID: resume, concurrency: 8, batchSize: batchSize, pageSize: 11, policy: policy)
        let job = CheckingPipeline(
            request: request, database: session, gateway: gateway ?? TransactionInfoGateway(apps: apps ?? self.apps()),
            logger: Logger(label: "test"), progress: nil, stop: stop)
        let outcome = try await job.run()
        // What `clawback run` does once the reports are written: the next run of the scope is a new one.
        if outcome.status == .succeeded {
            try await session.run { try RunStore.markFinalized(outcome.runID, on: $0) }
        }
        return outcome
    }

    /// (kind, units, idempotency key) of every ledger entry of a transaction, in order.
    func ledger(_ transactionID: String) throws -> [(String, Int64, String)] {
        try connection.query(
            "SELECT kind, units, idempotency_key FROM clawback.ledger WHERE transaction_id = \(transactionID) ORDER BY entry_id"
        ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(Int64.self, at: 1), try $0.decode(String.self, at: 2)) }
    }

    func verdicts(run runID: Int64) throws -> [String: String] {
        var result: [String: String] = [:]
        for row in try connection.query("SELECT transaction_id, verdict FROM clawback.run_checks WHERE run_id = \(runID)").rows {
            result[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return result
    }

    func ledgerCount() throws -> Int {
        try connection.query("SELECT count(*) FROM clawback.ledger").first?.decode(Int.self, at: 0) ?? -1
    }

    static func purchase(
        _ id: String, daysAgo: Double = 30, product: String = "gems_600", quantity: Int32 = 1, refund: RefundRecord? = nil,
        environment: String = "Production"
    ) -> TransactionRecord {
        TransactionRecord(
            transactionId: id, customerId: "c-\(id)", bundleId: bundleID, productId: product, quantity: quantity, priceMilli: 4990,
            currency: "USD", storefront: "USA", environment: environment,
            purchaseDate: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - daysAgo * 86_400).rounded()), refund: refund)
    }

    static func refund(daysAgo: Double = 10, type: String = "REFUND_FULL", percentage: Int32? = nil, reversedDaysAgo: Double? = nil) -> RefundRecord {
        RefundRecord(
            date: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - daysAgo * 86_400).rounded()), reason: 1, type: type,
            percentage: percentage,
            reversedDate: reversedDaysAgo.map { Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - $0 * 86_400).rounded()) })
    }
}
