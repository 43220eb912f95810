import AppStoreDriver
import AppStoreSimulator
import Foundation
import GooglePlayDriver
import HTTP
import Job
import Logging
import Postgres
import Reconciliation
import Storage
import Stripe
import TestSupport
import Testing

@testable import StripeDriver

/// `stripe-payments` lists the window's charges, refunds and disputes instead of asking each payment: over
/// generated web shops (every refund status and dispute stage, several currencies, payments never
/// collected, grants of payments Stripe never had), with 5% of Stripe's answers a 429 or a 500 and a few
/// charges, refunds and disputes served in a shape clawback cannot read, each grant's verdict and units are
/// what asking its payment alone (its complete statement) concludes, or unverified; the payment of an
/// unreadable item is unverified, and no other is held back by it.
@Suite("Stripe: the lists agree with asking each payment", .serialized)
struct StripeAgreementTests {
    static let shop = "web.studio.game"

    static func importGrants(_ grants: [StripeWorldGenerator.StripeGrantLine], on connection: PostgresConnection) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        var lines = Data()
        for grant in grants { lines += try encoder.encode(grant) + Data("\n".utf8) }
        let outcome = try GrantImport.importJSONLines(lines, skipInvalid: false, on: connection.storage)
        #expect(outcome.invalid.isEmpty, "\(outcome.invalid)")
    }

    @Test(
        "each grant's verdict and units as its payment asked alone concludes, or unverified (the third shop with its early fraud warnings reviewed)",
        arguments: zip([UInt64(1), 2, 3], ["show", "show", "review"]))
    func agree(seed: UInt64, warnings: String) async throws {
        StoreDrivers.register(StripeDriver())
        let now = Date()
        let window = try ReconciliationWindow(start: now - 60 * 86_400, end: now)
        let generated = StripeWorldGenerator.generate(
            payments: 300, start: now - 58 * 86_400, end: now - 86_400, shop: Self.shop, refundRate: 0.35, disputeRate: 0.2, unknownShare: 0.02,
            key: "rk_test_agreement", seed: seed)
        let simulator = Simulator(world: World(apps: [], transactions: []), chain: try SigningChain(), stripe: generated.world)
        let server = try await SimulatorServer.start(simulator: simulator, threads: 2)
        // A charge, a refund or a dispute of every 40th payment, each kind in turn, served unreadable.
        var unreadable: Set<String> = []
        var spoiled: Set<String> = []
        for (index, payment) in generated.world.payments.values.sorted(by: { $0.id < $1.id }).enumerated() where index % 40 == 0 {
            let kind = index / 40 % 3
            let id = kind == 0 ? payment.charges.last?.id : kind == 1 ? payment.refunds.first?.id : payment.disputes.first?.id
            if let id {
                unreadable.insert(id)
                spoiled.insert(payment.id)
            }
        }
        #expect(spoiled.count >= 4, "\(spoiled)")
        simulator.stripe?.setFaults(StripeFaults(rateLimitedShare: 0.025, serverErrorShare: 0.025, unreadableObjects: unreadable))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-stripe-agree-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("stripe.key").path
        #expect(FileManager.default.createFile(atPath: keyFile, contents: Data("rk_test_agreement".utf8), attributes: [.posixPermissions: 0o600]))
        let url = "http://127.0.0.1:\(server.port)"
        let configuration = try ClawbackConfiguration.parseWithStores(
            yaml: "stripe:\n  api_key_file: \(keyFile)\n  api_url: \(url)\n  early_fraud_warnings: \(warnings)\n  shops:\n    - name: \(Self.shop)\n")

        // The lists: the monthly run as an operator starts it.
        let listed = try await TestPostgres.withScratchDatabaseAsync { name -> [String: (Verdict, Int64)] in
            let connection = try TestPostgres.connect(database: name)
            try Migrator().migrate(on: connection.storage)
            try Self.importGrants(generated.grants, on: connection)
            let request = MonthlyRun.Request(
                selection: GrantSelection(window: window), strategy: StripeStore.payments, dryRun: false, resumeRunID: nil, concurrency: nil,
                batchSize: 50, auditShare: 0, metricsFile: nil, reports: .init(directory: directory.path),
                origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []),
                database: try TestPostgres.configuration(database: name).storage)
            let outcome: MonthlyRun.Outcome
            do {
                outcome = try await MonthlyRun.perform(
                    request, configuration: configuration, logger: Logger(label: "test"), progress: nil, stop: StopSignal())
            } catch let failure as MonthlyRun.Failure {
                outcome = try #require(failure.outcome, "\(failure)")
            }
            return try StripeRunTests.verdicts(connection, run: outcome.run.runID)
        }

        // The reference: every payment asked alone.
        let alone = try await TestPostgres.withScratchDatabaseAsync { name -> [String: (Verdict, Int64)] in
            let connection = try TestPostgres.connect(database: name)
            try Migrator().migrate(on: connection.storage)
            try Self.importGrants(generated.grants, on: connection)
            let http = try HTTPClient(configuration: .init(timeout: .seconds(10)))
            defer { http.shutdown() }
            let gateway = StripePaymentsGateway(
                client: StripeClient(key: "rk_test_agreement", baseURL: url, http: http, backoff: .milliseconds(20)), shops: [Self.shop],
                lists: false,
                reviewWarnings: warnings == "review")
            let request = CheckingRequest(
                scope: RunScope(selection: GrantSelection(window: window, store: StripeStore.store), strategy: StripeStore.payments, dryRun: false),
                origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []), concurrency: 8, batchSize: 50, pageSize: 100)
            let outcome = try await CheckingPipeline(
                request: request, database: try DatabaseSession(try TestPostgres.configuration(database: name).storage), gateway: gateway,
                logger: Logger(label: "test"), progress: nil, stop: StopSignal()
            ).run()
            return try StripeRunTests.verdicts(connection, run: outcome.runID)
        }
        await server.stop()

        #expect(listed.count == generated.grants.count && alone.count == generated.grants.count)
        for id in spoiled where listed[id] != nil {
            #expect(listed[id]?.0 == .unverified, "\(id) has an unreadable item: \(String(describing: listed[id]))")
        }
        var compared = 0
        for (id, reference) in alone where reference.0 != .unverified {
            guard let fast = listed[id], fast.0 != .unverified else { continue }
            compared += 1
            #expect(fast.0 == reference.0 && fast.1 == reference.1, "\(id): lists \(fast), alone \(reference)")
        }
        // The world holds every kind the table reads, and most grants were compared.
        let verdicts: Set<Verdict> = Set(alone.values.map(\.0))
        #expect(verdicts.isSuperset(of: [Verdict.ok, .refunded, .mismatch, .unverified, .unknownToStore]), "\(verdicts)")
        #expect(compared > generated.grants.count * 3 / 4, "\(compared) of \(generated.grants.count) compared")
    }

    @Test("an unreadable item that names no payment (a charge without its PaymentIntent, a refund without its charge) fails the lists")
    func unplaceable() throws {
        func item<Item: StripeObject>(_ type: Item.Type, _ json: String) throws -> StripeListed<Item>.Unreadable {
            guard case .unreadable(let item) = try JSONDecoder().decode(StripeListed<Item>.self, from: Data(json.utf8)) else {
                throw StripeError(.malformed, "read: \(json)")
            }
            return item
        }
        var listing = StripePaymentsGateway.Listing()
        listing.setAside(try item(Charge.self, #"{"id": "ch_1", "amount": "x", "payment_intent": "pi_1"}"#), path: "/v1/charges", isCharge: true)
        listing.setAside(try item(Refund.self, #"{"id": "re_1", "amount": "x", "charge": {"id": "ch_2"}}"#), path: "/v1/refunds", isCharge: false)
        #expect(listing.unreadablePayments == ["pi_1"] && listing.unreadableCharges == ["ch_2"] && listing.unplaceable.isEmpty)
        listing.setAside(try item(Charge.self, #"{"id": "ch_3", "amount": "x"}"#), path: "/v1/charges", isCharge: true)
        listing.setAside(try item(Refund.self, #"{"id": "re_2", "amount": "x"}"#), path: "/v1/refunds", isCharge: false)
        // The lists file refunds by charge: one naming its payment but not its charge could be another's.
        listing.setAside(try item(Refund.self, #"{"id": "re_3", "amount": "x", "payment_intent": "pi_4"}"#), path: "/v1/refunds", isCharge: false)
        #expect(listing.unplaceable.count == 3 && listing.unplaceable[0].hasPrefix("/v1/charges ch_3"), "\(listing.unplaceable)")
    }
}
