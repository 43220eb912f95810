import AppStoreSimulator
import Foundation
import GooglePlay
import HTTP
import Logging
import Postgres
import Storage
import TestSupport
import Testing
import _CryptoExtras

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// `clawback google-play sweep-voids`: each void kept once, the cursor moved with them, an app not read whole
/// read again next time, a gap past Google's 30 days said, one sweep at a time.
@Suite("Google Play: the voided purchases sweep")
struct GoogleVoidSweepTests {
    /// An order of `package` voided `hoursAgo` (recorded a minute later), every third one a quantity refund.
    static func voided(_ number: Int, package: String, hoursAgo: Double) -> GoogleOrderRecord {
        let now = Date()
        var order = GoogleOrderRecord(
            orderId: "GPA.\(package.count)-\(number)", packageName: package, purchaseToken: "\(package)-token-\(number)", productId: "gems_600",
            quantity: 3, priceMilli: 14_970, currency: "EUR", purchaseTime: now - hoursAgo * 3_600 - 86_400, state: "REFUNDED")
        order.voids = [
            .init(
                recordedAt: now - hoursAgo * 3_600 + 60, voidedAt: now - hoursAgo * 3_600, source: 1, reason: number % 2 == 0 ? 7 : 1,
                quantity: number % 3 == 0 ? 1 : nil)
        ]
        return order
    }

    typealias Setup = GoogleJobFixture

    static func with(_ orders: [GoogleOrderRecord], packages: [String], _ body: (Setup) async throws -> Void) async throws {
        try await GoogleJobFixture.with(orders, packages: packages, body)
    }

    func sweep(_ setup: Setup) async throws(GoogleVoidSweep.Failure) -> GoogleVoidSweep.Outcome {
        try await GoogleVoidSweep.perform(database: setup.database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
    }

    /// The sweep's failure, when it fails.
    func failure(_ setup: Setup) async -> GoogleVoidSweep.Failure? {
        do {
            _ = try await sweep(setup)
            return nil
        } catch {
            return error
        }
    }

    @Test("each void is kept once with its cursor; the next sweep adds only what is new, its overlap re-read adding nothing twice")
    func keepsEachVoidOnce() async throws {
        // Voids over the last 40 days: Google shows the last 30.
        let first = (0..<60).map { Self.voided($0, package: "com.studio.game", hoursAgo: Double($0) * 16 + 2) }
        try await Self.with(first, packages: ["com.studio.game"]) { setup in
            let inReach = first.filter { ($0.voids?[0].recordedAt ?? .distantPast) > Date() - 30 * 86_400 + 600 }
            let outcome = try await sweep(setup)
            #expect(outcome.apps == 1 && outcome.unreadApps.isEmpty && outcome.gaps.isEmpty)
            #expect(outcome.newVoids == inReach.count && outcome.voidsRead == inReach.count)
            let kept = try GoogleVoidStore.voids(packageName: "com.studio.game", on: setup.connection.storage)
            #expect(Set(kept.map(\.purchaseToken)) == Set(inReach.map(\.purchaseToken)))
            #expect(kept.filter { $0.quantity == 1 }.count == inReach.filter { $0.voids?[0].quantity == 1 }.count)
            #expect(kept.filter { $0.reason == 7 }.count == inReach.filter { $0.voids?[0].reason == 7 }.count)
            let cursor = try #require(try GoogleVoidStore.cursor(packageName: "com.studio.game", on: setup.connection.storage))
            #expect(abs(cursor.timeIntervalSinceNow + 60) < 30)
            // The kept voids are continuous from the first sweep's reach, Google's 30 days less the margin.
            let coverage = try #require(try GoogleVoidStore.coverage(packageName: "com.studio.game", on: setup.connection.storage))
            #expect(abs(coverage.from.timeIntervalSinceNow + 30 * 86_400 - 600) < 60 && coverage.until == cursor)

            // Two new voids, one recorded inside the overlap the next sweep re-reads.
            let later = [Self.voided(100, package: "com.studio.game", hoursAgo: 0.1), Self.voided(101, package: "com.studio.game", hoursAgo: 0.5)]
            setup.simulator.update { world in for order in later { world.orders[order.orderId] = order } }
            let again = try await sweep(setup)
            #expect(again.newVoids == 2)
            #expect(try GoogleVoidStore.voids(packageName: "com.studio.game", on: setup.connection.storage).count == inReach.count + 2)
            #expect(try await sweep(setup).newVoids == 0)
            // Later sweeps keep where the continuous voids begin.
            #expect(try GoogleVoidStore.coverage(packageName: "com.studio.game", on: setup.connection.storage)?.from == coverage.from)
        }
    }

    @Test("an app Google does not let the account read keeps no cursor and is read again; the others are swept (exit 75)")
    func unreadApp() async throws {
        let orders = (0..<5).map { Self.voided($0, package: "com.studio.game", hoursAgo: Double($0) + 1) }
        try await Self.with(orders, packages: ["com.studio.locked", "com.studio.game"]) { setup in
            let failure = try #require(await failure(setup), "a sweep with an unreadable app succeeded")
            #expect(failure.exitStatus == .temporaryFailure)
            #expect(failure.outcome?.unreadApps == ["com.studio.locked"])
            #expect(failure.outcome?.newVoids == 5)
            #expect(try GoogleVoidStore.cursor(packageName: "com.studio.locked", on: setup.connection.storage) == nil)
            #expect(try GoogleVoidStore.cursor(packageName: "com.studio.game", on: setup.connection.storage) != nil)
        }
    }

    @Test("an app not swept for longer than Google keeps is said to have a gap; a second sweep while one runs exits 85")
    func gapAndLock() async throws {
        try await Self.with([Self.voided(1, package: "com.studio.game", hoursAgo: 3)], packages: ["com.studio.game"]) { setup in
            try setup.connection.execute(
                """
                INSERT INTO clawback.google_void_cursors (package_name, read_until, covered_from)
                VALUES ('com.studio.game', now() - interval '45 days', now() - interval '90 days')
                """)
            let outcome = try await sweep(setup)
            #expect(outcome.gaps == ["com.studio.game"] && outcome.newVoids == 1)
            let gap = try #require(try GoogleVoidStore.gap(packageName: "com.studio.game", on: setup.connection.storage))
            #expect(gap.until.timeIntervalSince(gap.from) > 14 * 86_400)
            // After a gap the kept voids are continuous only from where that sweep could read.
            #expect(try GoogleVoidStore.coverage(packageName: "com.studio.game", on: setup.connection.storage)?.from == gap.until)
            // Swept again the next moment: no new gap, the last one kept.
            #expect(try await sweep(setup).gaps.isEmpty)
            #expect(try GoogleVoidStore.gap(packageName: "com.studio.game", on: setup.connection.storage) == gap)

            let holder = try PostgresConnection(setup.database)
            #expect(try holder.tryAdvisoryLockInOpenTransaction(GoogleVoidStore.lockKey.advisory))
            let refused = try #require(await failure(setup), "a second sweep ran beside the first")
            #expect(refused.exitStatus == .locked)
        }
    }

    @Test(
        "a page refused after the first keeps nothing and moves nothing; rows clawback cannot use keep the cursor but not the others out; a void twice is kept once"
    )
    func partialAndMalformed() async throws {
        let many = (0..<1_500).map { Self.voided($0, package: "com.studio.game", hoursAgo: Double($0) * 0.2 + 1) }
        try await Self.with(many, packages: ["com.studio.game"]) { setup in
            // The second page refused three times: through the client's two retries.
            setup.simulator.setFaults(GoogleFaults(failures: [200, 500, 500, 500]))
            let refused = try #require(await failure(setup), "a sweep with a refused second page succeeded")
            #expect(refused.exitStatus == .temporaryFailure && refused.outcome?.newVoids == 0)
            #expect(try GoogleVoidStore.voids(packageName: "com.studio.game", on: setup.connection.storage).isEmpty)
            #expect(try GoogleVoidStore.cursor(packageName: "com.studio.game", on: setup.connection.storage) == nil)

            // One void with no unit voided, and one order whose void Google lists twice.
            setup.simulator.update { world in
                var bad = Self.voided(2_000, package: "com.studio.game", hoursAgo: 5)
                bad.voids?[0].quantity = 0
                world.orders[bad.orderId] = bad
                var twice = Self.voided(2_001, package: "com.studio.game", hoursAgo: 6)
                twice.voids = (twice.voids ?? []) + (twice.voids ?? [])
                world.orders[twice.orderId] = twice
            }
            let malformed = try #require(await failure(setup), "a sweep with an unusable row succeeded")
            #expect(malformed.exitStatus == .temporaryFailure)
            #expect(malformed.outcome?.newVoids == 1_501 && malformed.outcome?.voidsRead == 1_503)
            #expect(try GoogleVoidStore.cursor(packageName: "com.studio.game", on: setup.connection.storage) == nil)
            #expect(try GoogleVoidStore.voids(packageName: "com.studio.game", on: setup.connection.storage).count == 1_501)
        }
    }
}
