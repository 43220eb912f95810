import AppStore
import AppStoreDriver
import AppStoreSimulator
import Foundation
import GooglePlayDriver
import Job
import Logging
import Reconciliation
import Storage
import TestSupport
import Testing

/// Every strategy, and every narrowed, sharded, dry, resumed or faulty run, is held to what a clean
/// `transaction-info` run concludes over the same generated world and the same ledger so far: each grant's
/// verdict is the reference's, or `unverified`, or `no_refund_reported` where the reference found nothing
/// refunded; and no ledger entry exists that the reference would not write.
@Suite("Strategies agree with transaction-info")
struct StrategyAgreementTests {
    static let grantCount = FaultScale.pick(short: 900, long: 5000)
    static let seeds: [UInt64] = FaultScale.pick(short: [7], long: [7, 8])

    /// What a run ends with: each grant's verdict, and the ledger (keys normalized: a reversal's key names an
    /// entry id, which differs between databases).
    struct Result {
        var verdicts: [String: String] = [:]
        /// Per transaction, its entries as "kind|units|key", sorted.
        var ledger: [String: [String]] = [:]
    }

    enum Variant: String, CaseIterable {
        case transactionInfoUnderFaults, notifications, notificationsUnderFaults, notificationsDryRun, notificationsResumed
        case customerHistory, customerHistoryUnderFaults, customerHistoryShards, customerHistoryPlayer, receipt

        var strategy: RunStrategy {
            switch self {
            case .transactionInfoUnderFaults: .transactionInfo
            case .notifications, .notificationsUnderFaults, .notificationsDryRun, .notificationsResumed: .notifications
            case .customerHistory, .customerHistoryUnderFaults, .customerHistoryShards, .customerHistoryPlayer: .customerHistory
            case .receipt: .receipt
            }
        }

        var faults: FaultPlan {
            guard [.transactionInfoUnderFaults, .notificationsUnderFaults, .customerHistoryUnderFaults].contains(self) else { return .none }
            var faults = FaultPlan()
            faults.internalErrorShare = 0.08
            faults.resetShare = 0.02
            faults.hostileShare = 0.04
            faults.hostileKind = "tampered"
            // Apple refuses the sandbox credentials: a refusal is never evidence.
            faults.unauthorizedEnvironments = ["Sandbox"]
            faults.seed = 11
            return faults
        }
    }

    /// The world and the clean transaction-info reference of `seed`, computed once for all the variants' cases.
    actor References {
        static let shared = References()
        private var made: [UInt64: Task<(AgreementWorld, Result), any Error>] = [:]

        func of(seed: UInt64) async throws -> (AgreementWorld, Result) {
            if let task = made[seed] { return try await task.value }
            let task = Task {
                let world = AgreementWorld(grants: StrategyAgreementTests.grantCount, seed: seed, bundleID: JobFixture.bundleID, now: Date())
                return (world, try await StrategyAgreementTests.outcome(of: nil, in: world))
            }
            made[seed] = task
            return try await task.value
        }
    }

    @Test("the reference concludes what the generated world says, and the world holds every verdict", arguments: seeds)
    func reference(seed: UInt64) async throws {
        let (world, reference) = try await References.shared.of(seed: seed)
        let counts = Dictionary(grouping: reference.verdicts.values, by: { $0 }).mapValues(\.count)
        // The world exercises every verdict the reference can reach, and the reference concludes what the world says.
        for verdict in ["ok", "refunded", "revoked", "refund_reversed", "unknown_to_apple", "mismatch"] {
            #expect((counts[verdict] ?? 0) > 0, "the world has no \(verdict) grant: \(counts)")
        }
        #expect(counts["unverified"] == nil)
        let wrong = world.expected.filter { reference.verdicts[$0.key] != $0.value }.map {
            "\($0.key): \(reference.verdicts[$0.key] ?? "none"), world says \($0.value)"
        }
        #expect(wrong.isEmpty, "the reference disagrees with the world: \(wrong.prefix(10))")
        // The ledger moves the units the world says: what is taken back from a refunded grant is on the ledger.
        let adjusted = reference.ledger.values.joined().filter { $0.hasPrefix("adjustment|") }.count
        #expect(adjusted > 0, "the world has no refund that changed")
    }

    // One case per strategy variant, run side by side (each its own database and simulator): the longest test
    // of the suite no longer runs its variants one after the other.
    @Test(
        "each strategy's verdicts are the reference's, unverified, or a documented weaker one; no ledger entry beyond the reference's",
        arguments: seeds, Variant.allCases)
    func agree(seed: UInt64, variant: Variant) async throws {
        let (world, reference) = try await References.shared.of(seed: seed)
        let result = try await Self.outcome(of: variant, in: world)
        var disagreements: [String] = []
        for (id, expected) in reference.verdicts {
            guard let actual = result.verdicts[id] else {
                if variant != .customerHistoryPlayer { disagreements.append("\(id): not checked") }
                continue
            }
            // The notifications strategy's precondition: Apple notified the refund (the app had a notification
            // URL). A refund Apple never notified is invisible to it; the audit sample measures how many.
            let outsidePrecondition = variant.strategy == .notifications && world.unnotified.contains(id)
            let weaker =
                actual == "no_refund_reported"
                && (["ok", "mismatch", "unknown_to_apple"].contains(expected) || outsidePrecondition)
            if actual != expected && actual != "unverified" && !weaker { disagreements.append("\(id): \(actual), reference \(expected)") }
        }
        #expect(disagreements.isEmpty, "\(variant): \(disagreements.prefix(10))")
        // Per transaction: no entry the reference did not write (counted, so two reversals are not one); and
        // where both reached the same definite verdict, the very same entries.
        var extra: [String] = []
        var different: [String] = []
        for (id, entries) in result.ledger {
            var expected = reference.ledger[id] ?? []
            for entry in entries {
                if let at = expected.firstIndex(of: entry) { expected.remove(at: at) } else { extra.append("\(id): \(entry)") }
            }
        }
        for (id, verdict) in result.verdicts where verdict == reference.verdicts[id] && verdict != "unverified" && variant != .notificationsDryRun {
            if (result.ledger[id] ?? []) != (reference.ledger[id] ?? []) {
                different.append("\(id): \(result.ledger[id] ?? []) vs \(reference.ledger[id] ?? [])")
            }
        }
        #expect(extra.isEmpty, "\(variant) wrote entries the reference did not: \(extra.prefix(10))")
        #expect(different.isEmpty, "\(variant) agreed on the verdict but not on the ledger: \(different.prefix(10))")
        if variant == .notifications || variant == .customerHistory || variant == .receipt {
            // Clean runs of a complete strategy conclude something about every grant.
            #expect(!result.verdicts.values.contains("unverified"), "\(variant) left grants unverified without a fault")
        }
    }

    /// Two runs over one database: a clean transaction-info run on Apple's `before` (the ledger so far), then
    /// `variant` (nil: the clean transaction-info reference) on Apple's `after`.
    static func outcome(of variant: Variant?, in world: AgreementWorld) async throws -> Result {
        try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: world.before) { fixture in
                try await run(variant, in: world, fixture: fixture)
            }
        }
    }

    static func run(_ variant: Variant?, in world: AgreementWorld, fixture: JobFixture) async throws -> Result {
        do {
            var lines = Data()
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            for grant in world.grants { lines += try encoder.encode(grant) + Data("\n".utf8) }
            let imported = try GrantImport.importJSONLines(lines, skipInvalid: false, on: fixture.connection.storage)
            #expect(imported.invalid.isEmpty)
            for id in world.receipts {
                try fixture.connection.execute(
                    "UPDATE clawback.grants SET receipt = \(ReceiptStrategyTests.receipt(id)) WHERE transaction_id = \(id)")
            }
            let first = try await fixture.run()
            #expect(first.status == .succeeded)
            fixture.simulator.update(world.after.map { .transaction($0) })
            let strategy = variant?.strategy ?? .transactionInfo
            fixture.simulator.setFaults(variant?.faults ?? .none)
            func gateway() -> any StoreGateway {
                AppStoreDriver.gateway(strategy, apps: fixture.apps(), auditShare: 0.05, auditSalt: "agreement", logger: Logger(label: "test"))
            }
            func scope(shard: (Int, Int) = (0, 1), player: String? = nil, dryRun: Bool = false) -> RunScope {
                RunScope(
                    selection: GrantSelection(window: fixture.window, playerID: player, shardIndex: shard.0, shardCount: shard.1),
                    strategy: strategy, dryRun: dryRun)
            }
            var runs: [Int64] = []
            switch variant {
            case .customerHistoryShards:
                for index in 0..<3 { runs.append(try await fixture.run(scope(shard: (index, 3)), gateway: gateway()).runID) }
            case .customerHistoryPlayer:
                for player in AgreementWorld.hostilePlayers.prefix(3) {
                    runs.append(try await fixture.run(scope(player: player), gateway: gateway()).runID)
                }
            case .notificationsDryRun:
                runs.append(try await fixture.run(scope(dryRun: true), gateway: gateway()).runID)
            case .notificationsResumed:
                let stop = StopSignal()
                let interrupted = try await fixture.run(
                    scope(), gateway: StopAfter(limit: world.grants.count / 3, inner: gateway(), stop: stop), stop: stop)
                #expect(interrupted.status == .interrupted)
                let resumed = try await fixture.run(scope(), gateway: gateway())
                #expect(resumed.runID == interrupted.runID)
                runs.append(resumed.runID)
            default:
                runs.append(try await fixture.run(scope(), gateway: gateway()).runID)
            }
            var result = Result()
            for run in runs { result.verdicts.merge(try fixture.verdicts(run: run)) { $1 } }
            for row in try fixture.connection.query(
                """
                SELECT transaction_id, kind, units, regexp_replace(idempotency_key, '^reversal:[0-9]+$', 'reversal:#')
                FROM clawback.ledger ORDER BY transaction_id, entry_id
                """
            ).rows {
                result.ledger[try row.decode(String.self, at: 0), default: []].append(
                    "\(try row.decode(String.self, at: 1))|\(try row.decode(Int64.self, at: 2))|\(try row.decode(String.self, at: 3))")
            }
            return result
        }
    }
}
