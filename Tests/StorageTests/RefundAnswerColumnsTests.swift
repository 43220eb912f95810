import Foundation
import Postgres
import Storage
import TestSupport
import Testing

/// Migration 0009 on a database that already has answers: the columns are filled from each stored body,
/// and from then on a column that disagrees with its body, or stands without one, is refused.
@Suite("refund-request answers in columns of their own (0009)")
struct RefundAnswerColumnsTests {
    static let answers: [String?] = [
        nil,
        #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "consumptionPercentage": 40000, "refundPreference": "DECLINE"}"#,
        #"{"customerConsented": true, "deliveryStatus": "UNDELIVERED_OTHER", "consumptionPercentage": 0}"#,
        #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "refundPreference": "GRANT_PRORATED"}"#,
    ]

    @Test("rows answered before the migration get their columns from the body; a drifting column is refused")
    func backfillAndGuard() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator(migrations: Migrator().migrations.filter { $0.version < 9 }).migrate(on: connection.storage)
            for (index, answer) in Self.answers.enumerated() {
                let state = answer == nil ? "received" : ["answered", "sending", "expired"][index % 3]
                let settled = ["received", "sending"].contains(state) ? nil : Date()
                try connection.execute(
                    """
                    INSERT INTO clawback.refund_requests (notification_uuid, bundle_id, environment, transaction_id, requested_at, deadline,
                        state, answer, answered_at, settled_at, attempts, received_at)
                    VALUES (\(UUID()), 'com.studio.game', 'Production', \(String(7_000_000 + index)), now(), now() + interval '12 hours',
                        \(state), \(answer)::jsonb, \(state == "answered" ? Date() : nil), \(settled), 1, now())
                    """)
            }
            try Migrator().migrate(on: connection.storage)
            let rows = try connection.query(
                """
                SELECT transaction_id, answer_delivery_status, answer_consumption_percentage, answer_refund_preference
                FROM clawback.refund_requests ORDER BY transaction_id
                """
            ).rows
            #expect(rows.count == Self.answers.count)
            for (row, answer) in zip(rows, Self.answers) {
                let body = try answer.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? nil
                #expect(try row.decode(String?.self, column: "answer_delivery_status") == body?["deliveryStatus"] as? String)
                #expect(
                    try row.decode(Int64?.self, column: "answer_consumption_percentage") == (body?["consumptionPercentage"] as? Int).map(Int64.init))
                #expect(try row.decode(String?.self, column: "answer_refund_preference") == body?["refundPreference"] as? String)
            }

            let answered = String(7_000_001)
            for drift in [
                "answer_consumption_percentage = 39999", "answer_refund_preference = NULL", "answer_delivery_status = 'UNDELIVERED_OTHER'",
            ] {
                let error = #expect(throws: PostgresError.self, "\(drift)") {
                    try connection.executeScript(unsafeSQL: "UPDATE clawback.refund_requests SET \(drift) WHERE transaction_id = '\(answered)'")
                }
                #expect(error?.sqlState == "23514", "\(drift): a CHECK violation")
            }
            let orphan = #expect(throws: PostgresError.self) {
                try connection.execute("UPDATE clawback.refund_requests SET answer_delivery_status = 'DELIVERED' WHERE answer IS NULL")
            }
            #expect(orphan?.sqlState == "23514")
        }
    }
}
