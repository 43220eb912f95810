import Foundation
import Postgres
import Storage
import TestSupport
import Testing

/// `grants import` of a web shop's Stripe grants, with the Stripe store registered as the executable
/// registers it: a line whose transaction_id is not a PaymentIntent is refused, naming the line, as
/// `clawback.record_stripe_grant` refuses it.
@Suite("Stripe grants imported")
struct StripeGrantImportTests {
    @Test("grants import takes Stripe lines and refuses one whose transaction_id is not a PaymentIntent, naming the line")
    func importing() throws {
        BuiltInDrivers.registered
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let day = PostgresTimestamp.format(Date() - 86_400)
            func line(_ id: String, store: String = "stripe") -> String {
                #"{"store":"\#(store)","transaction_id":"\#(id)","bundle_id":"web.studio.game","product_id":"gems_600","player_id":"p1","units_granted":600,"purchased_at":"\#(day)"}"#
            }
            let lines = [
                line("pi_1"), line("ch_2"), line("cs_test_3"), line("not-a-pi-but-apple's", store: "app_store"), line("pi_"), line("pi_1; DROP"),
            ]
            let outcome = try GrantImport.importData(
                Data(lines.joined(separator: "\n").utf8), format: .jsonl, skipInvalid: true, on: connection.storage)
            let reasons = Dictionary(uniqueKeysWithValues: outcome.invalid.map { ($0.line, $0.reason) })
            #expect(reasons.keys.sorted() == [2, 3, 5, 6], "as record_stripe_grant refuses them (CB005)")
            #expect(reasons[2] == "transaction_id of a stripe grant must be a PaymentIntent id (pi_…)", "\(reasons)")
            #expect(outcome.inserted == 2)
            let stored = try connection.query("SELECT store::text || ':' || transaction_id FROM clawback.grants ORDER BY 1").rows.map {
                try $0.decode(String.self, at: 0)
            }
            #expect(stored == ["app_store:not-a-pi-but-apple's", "stripe:pi_1"])
        }
    }
}
