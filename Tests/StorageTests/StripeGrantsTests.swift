import Foundation
import Postgres
import Storage
import TestSupport
import Testing

/// A web shop's Stripe grants (migration 0023): the grant path's door for them, at most once per
/// PaymentIntent whatever the store, the same tail window, an id that is not a PaymentIntent's refused at
/// the door (and on import: `StripeGrantImportTests`); the game's role may call it.
@Suite("Stripe grants")
struct StripeGrantsTests {
    static func recordStripeGrant(
        _ connection: PostgresConnection, paymentIntent: String?, purchasedAt: Date, livemode: Bool = true, currency: String? = "jpy"
    ) throws -> Bool {
        try connection.query(
            """
            SELECT clawback.record_stripe_grant('web.studio.game', \(paymentIntent), 'gems_600', 'player-7', 600, \(purchasedAt),
                p_livemode => \(livemode), p_price_milli => 980000, p_currency => \(currency))
            """
        ).first?.decode(Bool.self, at: 0) ?? false
    }

    @Test("a PaymentIntent is granted once, whatever the store; the tail window, a future date and a charge's id are refused")
    func atMostOnce() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let now = Date()
            #expect(try Self.recordStripeGrant(connection, paymentIntent: "pi_3Q0abcDEF123", purchasedAt: now - 60))
            #expect(try !Self.recordStripeGrant(connection, paymentIntent: "pi_3Q0abcDEF123", purchasedAt: now - 3600))
            #expect(try Self.recordStripeGrant(connection, paymentIntent: "pi_test_1", purchasedAt: now - 60, livemode: false, currency: nil))
            // An id another store's door recorded is not granted again through Stripe's.
            #expect(try SchemaTests.recordGrant(connection, id: "pi_apple_lookalike", purchasedAt: now - 60))
            #expect(try !Self.recordStripeGrant(connection, paymentIntent: "pi_apple_lookalike", purchasedAt: now - 60))
            for id: String? in ["ch_3Q0abc", "cs_test_a1", "pi_", "", nil, "pi_1; DROP TABLE x"] {
                let refused = try #require(throws: PostgresError.self) { try Self.recordStripeGrant(connection, paymentIntent: id, purchasedAt: now) }
                #expect(refused.sqlState == "CB005", "\(String(describing: id))")
            }
            let old = try #require(throws: PostgresError.self) {
                try Self.recordStripeGrant(connection, paymentIntent: "pi_old", purchasedAt: now - 31 * 86_400)
            }
            #expect(old.sqlState == "CB001")
            let future = try #require(throws: PostgresError.self) {
                try Self.recordStripeGrant(connection, paymentIntent: "pi_future", purchasedAt: now + 86_400)
            }
            #expect(future.sqlState == "CB002")
            #expect(future.hint?.contains("when the store created the payment") == true, "\(String(describing: future.hint))")

            let rows = try connection.query(
                """
                SELECT store::text, transaction_id, original_transaction_id, bundle_id, environment, quantity, units_granted,
                       coalesce(price_milli::text, '-'), coalesce(currency, '-')
                FROM clawback.grants WHERE store = 'stripe' ORDER BY transaction_id
                """
            ).rows.map { row in try (0..<9).map { try row.decode(String.self, at: $0) }.joined(separator: "|") }
            #expect(
                rows == [
                    "stripe|pi_3Q0abcDEF123|pi_3Q0abcDEF123|web.studio.game|Production|1|600|980000|JPY",
                    "stripe|pi_test_1|pi_test_1|web.studio.game|Sandbox|1|600|980000|-",
                ])
            let executable = try connection.query(
                """
                SELECT has_function_privilege('clawback_game',
                    'clawback.record_stripe_grant(text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text)', 'EXECUTE')
                """
            ).first?.decode(Bool.self, at: 0)
            #expect(executable == true)
        }
    }
}
