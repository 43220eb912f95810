import Foundation
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

/// Google Play grants beside Apple's (migration 0013): the grant path's door for them, at most once per
/// purchase token whatever the store, the same tail window; runs, which ask Apple, never read them; import.
@Suite("Google Play grants")
struct GooglePlayGrantsTests {
    func withMigratedDatabase(_ body: (PostgresConnection) throws -> Void) throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            try body(connection)
        }
    }

    static func recordGoogleGrant(
        _ connection: PostgresConnection, token: String, orderID: String?, purchasedAt: Date, test: Bool = false, quantity: Int32 = 1
    ) throws -> Bool {
        try connection.query(
            """
            SELECT clawback.record_google_grant('com.studio.game', \(token), \(orderID), 'gems_600', 'player-7', \(Int64(600 * quantity)),
                \(purchasedAt), \(quantity), \(test), 4990, 'EUR', 'acct-7f3a')
            """
        ).first?.decode(Bool.self, at: 0) ?? false
    }

    @Test("a purchase token is granted once, whatever the store; the tail window and the empty order id are refused")
    func atMostOnce() throws {
        try withMigratedDatabase { connection in
            let now = Date()
            let token = "opaque-token.AO-J1Oy2fN3pZ_" + String(repeating: "x", count: 120)
            #expect(try Self.recordGoogleGrant(connection, token: token, orderID: "GPA.3312-3456-7890-12345", purchasedAt: now - 60, quantity: 3))
            #expect(try !Self.recordGoogleGrant(connection, token: token, orderID: "GPA.3312-3456-7890-12345", purchasedAt: now - 3600))
            // A promo code: no order id.
            #expect(try Self.recordGoogleGrant(connection, token: "promo-token", orderID: nil, purchasedAt: now - 60, test: true))
            // An id Apple's door recorded is not granted again through Google's, nor the other way round.
            #expect(try SchemaTests.recordGrant(connection, id: "2000000001", purchasedAt: now - 60))
            #expect(try !Self.recordGoogleGrant(connection, token: "2000000001", orderID: "GPA.1", purchasedAt: now - 60))
            #expect(try !SchemaTests.recordGrant(connection, id: token, purchasedAt: now - 60))
            let old = try #require(throws: PostgresError.self) {
                try Self.recordGoogleGrant(connection, token: "old-token", orderID: "GPA.2", purchasedAt: now - 31 * 86_400)
            }
            #expect(old.sqlState == "CB001")
            let empty = try #require(throws: PostgresError.self) { try Self.recordGoogleGrant(connection, token: "t", orderID: "", purchasedAt: now) }
            #expect(empty.sqlState == "CB004")

            let rows = try connection.query(
                """
                SELECT store::text, transaction_id, original_transaction_id, coalesce(order_id, '-'), environment, quantity, units_granted,
                       coalesce(obfuscated_account_id, '-')
                FROM clawback.grants ORDER BY store, transaction_id
                """
            ).rows.map { row in try (0..<8).map { try row.decode(String.self, at: $0) }.joined(separator: "|") }
            #expect(
                rows == [
                    "app_store|2000000001|2000000001|-|Production|1|600|-",
                    "google_play|\(token)|\(token)|GPA.3312-3456-7890-12345|Production|3|1800|acct-7f3a",
                    "google_play|promo-token|promo-token|-|Sandbox|1|600|acct-7f3a",
                ])
        }
    }

    @Test("the game's role may call Google's door, and nothing of the shared checks")
    func gameRole() throws {
        try withMigratedDatabase { connection in
            let role = try connection.query("SELECT count(*) FROM pg_roles WHERE rolname = 'clawback_game'").first?.decode(Int.self, at: 0)
            try #require(role == 1, "the test cluster's migrating role creates clawback_game")
            let privileges = try connection.query(
                """
                SELECT has_function_privilege('clawback_game',
                           'clawback.record_google_grant(text, text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text, text)',
                           'EXECUTE'),
                       has_function_privilege('clawback_game', 'clawback.admit_grant(text, text, timestamptz)', 'EXECUTE')
                """)
            #expect(try privileges.first?.decode(Bool.self, at: 0) == true)
            #expect(try privileges.first?.decode(Bool.self, at: 1) == false)
            // As the game's role, the door records a purchase (it runs as the owner, with the owner's checks).
            try connection.execute("SET ROLE clawback_game")
            #expect(try Self.recordGoogleGrant(connection, token: "as-the-game", orderID: "GPA.9", purchasedAt: Date() - 60))
            try connection.execute("RESET ROLE")
            #expect(try connection.query("SELECT count(*) FROM clawback.grants WHERE store = 'google_play'").first?.decode(Int.self, at: 0) == 1)
        }
    }

    @Test("a run's selection, its count and its pages hold App Store grants only")
    func runsReadAppleOnly() throws {
        try withMigratedDatabase { connection in
            let now = Date()
            for index in 0..<5 {
                #expect(try SchemaTests.recordGrant(connection, id: "300000000\(index)", purchasedAt: now - Double(index) * 60 - 60))
                #expect(
                    try Self.recordGoogleGrant(
                        connection, token: "google-\(index)", orderID: "GPA.\(index)", purchasedAt: now - Double(index) * 60 - 90))
            }
            let selection = GrantSelection(window: try ReconciliationWindow(start: now - 86_400, end: now + 60))
            #expect(try GrantStore.count(selection, on: connection.storage) == 5)
            let page = try GrantStore.page(selection, after: nil, excludingCheckedBy: nil, limit: 100, on: connection.storage)
            #expect(page.grants.map(\.transactionID).sorted() == (0..<5).map { "300000000\($0)" })
        }
    }

    @Test("a refund request's facts are App Store grants only: a Google grant whose token equals its original id is not its delivery")
    func refundRequestFacts() throws {
        try withMigratedDatabase { connection in
            #expect(try Self.recordGoogleGrant(connection, token: "2000000000000777", orderID: "GPA.7", purchasedAt: Date() - 60))
            let facts = try RefundRequestStore.facts(
                transactionID: "2000000000000999", originalTransactionID: "2000000000000777", bundleID: "com.studio.game", purchasedAt: nil,
                grantsCompleteSince: nil, on: connection.storage)
            #expect(facts.delivery != .delivered)
            let direct = try RefundRequestStore.facts(
                transactionID: "2000000000000777", originalTransactionID: nil, bundleID: "com.studio.game", purchasedAt: nil,
                grantsCompleteSince: nil, on: connection.storage)
            #expect(direct.delivery != .delivered)
        }
    }

    @Test("import takes Google Play lines (store, order_id, obfuscated_account_id) and refuses App Store fields on them")
    func importLines() throws {
        try withMigratedDatabase { connection in
            let lines = [
                #"{"store":"google_play","transaction_id":"tok-1","order_id":"GPA.1","bundle_id":"com.studio.game","product_id":"gems_600","player_id":"p","units_granted":600,"purchased_at":"2026-10-01T00:00:00Z","obfuscated_account_id":"a1","currency":"EUR","price_milli":4990}"#,
                #"{"transaction_id":"2000000000000001","bundle_id":"com.studio.game","product_id":"gems_600","player_id":"p","units_granted":600,"purchased_at":"2026-10-01T00:00:00Z"}"#,
            ]
            let outcome = try GrantImport.importJSONLines(Data(lines.joined(separator: "\n").utf8), skipInvalid: false, on: connection.storage)
            #expect(outcome.inserted == 2 && outcome.invalid.isEmpty)
            let stores = try connection.query("SELECT transaction_id, store::text, coalesce(order_id, '-') FROM clawback.grants ORDER BY 1").rows.map
            {
                try "\($0.decode(String.self, at: 0))|\($0.decode(String.self, at: 1))|\($0.decode(String.self, at: 2))"
            }
            #expect(stores == ["2000000000000001|app_store|-", "tok-1|google_play|GPA.1"])

            let bad = [
                #"{"store":"google_play","transaction_id":"tok-2","bundle_id":"b","product_id":"p","player_id":"p","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z","receipt":"MIIT"}"#,
                #"{"store":"play","transaction_id":"tok-3","bundle_id":"b","product_id":"p","player_id":"p","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z"}"#,
                #"{"transaction_id":"2000000000000002","bundle_id":"b","product_id":"p","player_id":"p","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z","obfuscated_account_id":"a"}"#,
                #"{"store":"google_play","transaction_id":"tok-4","order_id":"","bundle_id":"b","product_id":"p","player_id":"p","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z"}"#,
                #"{"store":"google_play","transaction_id":"tok-5","original_transaction_id":"tok-0","bundle_id":"b","product_id":"p","player_id":"p","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z"}"#,
            ]
            let refused = try GrantImport.importJSONLines(Data(bad.joined(separator: "\n").utf8), skipInvalid: false, on: connection.storage)
            #expect(refused.inserted == 0)
            #expect(refused.invalid.map(\.line) == [1, 2, 3, 4, 5])
            #expect(refused.invalid[0].reason.contains("receipt is for store app_store only"))
            #expect(refused.invalid[1].reason.contains("store must be app_store or google_play"))
            #expect(refused.invalid[2].reason.contains("obfuscated_account_id is for store google_play only"))
            #expect(refused.invalid[3].reason.contains("order_id is empty"))
            #expect(refused.invalid[4].reason.contains("must be its transaction_id"))
        }
    }
}
