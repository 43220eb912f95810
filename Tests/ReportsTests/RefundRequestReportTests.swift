import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
import Reports
import Storage
import TestSupport
import Testing

/// The refund-request parts of a report: one detail row per request, summary figures that are exactly the
/// detail's pivot, and the report's as-of time applied to answers and decisions.
@Suite("Reports: refund requests")
struct RefundRequestReportTests {
    static let states = ["received", "sending", "answered", "answered", "not_consented", "unanswerable", "refused", "expired"]

    /// `count` generated requests of two apps and three products, in every state and outcome, some about
    /// purchases outside the window.
    static func insert(_ count: Int, into fixture: ReportFixture, answeredAt: Date) throws {
        var random = SeededGenerator(seed: 41)
        for index in 0..<count {
            let state = states[Int.random(in: 0..<states.count, using: &random)]
            let purchased = ReportFixture.windowStart + Double.random(in: -20...100, using: &random) * 86_400
            let requested = purchased + 86_400
            let answered = state == "answered"
            let late = answered && Bool.random(using: &random)
            let outcome = ["REFUND", "REFUND_DECLINED", nil][Int.random(in: 0..<3, using: &random)]
            let answeredTime = answered ? (late ? requested + 50_000 : answeredAt) : nil
            // Final states are settled when answered, else an hour after the request.
            let settled: Date? = ["received", "sending"].contains(state) ? nil : answeredTime ?? requested + 3600
            let answer =
                answered || state == "sending" ? #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "consumptionPercentage": 40000}"# : nil
            try fixture.connection.execute(
                """
                INSERT INTO clawback.refund_requests (notification_uuid, bundle_id, environment, transaction_id, product_id, purchased_at,
                    requested_at, deadline, state, answer, answer_delivery_status, answer_consumption_percentage, units_granted, answered_at,
                    outcome, outcome_at, attempts, received_at, settled_at)
                VALUES (\(UUID()), \(index % 2 == 0 ? "com.studio.other" : "com.studio.game"), 'Production', \(String(5_000_000 + index)),
                    \(["gems_100", "gems_600", "coins_250"][index % 3]), \(purchased), \(requested), \(requested + 43_200), \(state),
                    \(answer)::jsonb, \(answer == nil ? nil : "DELIVERED"), \(answer == nil ? nil : Int64(40000)),
                    \(Int64(100 * (index % 7 + 1))), \(answeredTime), \(outcome),
                    \(outcome == nil ? nil : requested + 90_000), 1, \(requested), \(settled))
                """)
        }
    }

    @Test("every summary figure is the pivot of the detail rows; requests about purchases outside the window are left out")
    func pivot() throws {
        try ReportFixture.with { fixture in
            try Self.insert(400, into: fixture, answeredAt: ReportFixture.windowStart + 86_400 * 2)
            let asOf = Date()
            let lines = try ReportStore(fixture.connection.storage).refundRequests(
                from: ReportFixture.windowStart, to: ReportFixture.windowEnd, asOf: asOf)
            let inWindow = try fixture.connection.query(
                "SELECT count(*) FROM clawback.refund_requests WHERE purchased_at >= \(ReportFixture.windowStart) AND purchased_at < \(ReportFixture.windowEnd)"
            ).first?.decode(Int.self, at: 0)
            #expect(lines.count == inWindow)
            #expect(lines.count > 200 && lines.count < 400)
            let rows = RefundRequestReport.summaryRows(lines, window: "w")
            // Pivot the detail by hand, from the CSV cells.
            var expected: [String: (Int, Int64)] = [:]
            for line in lines {
                let cells = RefundRequestReport.row(line)
                func text(_ index: Int) -> String { cells[index].csvText }
                let key = "\(line.bundleID)|\(line.productID)|"
                let units = Int64(text(14)) ?? 0
                func add(_ figure: String, _ counted: Bool, units: Int64) {
                    guard counted else { return }
                    let sum = expected[key + figure] ?? (0, 0)
                    expected[key + figure] = (sum.0 + 1, sum.1 + units)
                }
                let state = text(8)
                add("received", true, units: units)
                add("answered", state == "answered", units: units)
                add("answered_in_time", text(10) == "yes", units: units)
                add("not_consented", state == "not_consented", units: units)
                add("unanswerable", state == "unanswerable", units: units)
                add("refused", state == "refused", units: units)
                add("expired", state == "expired", units: units)
                add("open", state == "received" || state == "sending", units: units)
                add("declined_by_apple", text(18) == "REFUND_DECLINED", units: Int64(text(20)) ?? 0)
                add("refunded_by_apple", text(18) == "REFUND", units: units)
                add("undecided", text(18).isEmpty, units: units)
                #expect(text(10) == "yes" ? state == "answered" : true)
            }
            #expect(rows.count == 6 * RefundRequestReport.Figure.allCases.count)
            for row in rows {
                guard case .text(let bundle) = row[3], case .text(let figure) = row[2], case .text(let product) = row[9],
                    case .number(let count) = row[5], case .number(let units) = row[6]
                else {
                    Issue.record("a summary row of the wrong shape: \(row)")
                    continue
                }
                let sum = expected["\(bundle)|\(product)|\(figure)"] ?? (0, 0)
                #expect(Int(count) == sum.0, "\(bundle) \(product) \(figure)")
                #expect(Int64(units) == sum.1, "\(bundle) \(product) \(figure)")
            }
        }
    }

    @Test("as of an earlier time, later answers and decisions are left out")
    func asOf() throws {
        try ReportFixture.with { fixture in
            let answeredAt = ReportFixture.windowStart + 86_400 * 30
            try Self.insert(100, into: fixture, answeredAt: answeredAt)
            let before = try ReportStore(fixture.connection.storage).refundRequests(
                from: ReportFixture.windowStart, to: ReportFixture.windowEnd, asOf: answeredAt - 1)
            let after = try ReportStore(fixture.connection.storage).refundRequests(
                from: ReportFixture.windowStart, to: ReportFixture.windowEnd, asOf: Date())
            #expect(before.allSatisfy { $0.answeredAt.map { $0 < answeredAt } ?? true })
            #expect(before.allSatisfy { $0.outcomeAt.map { $0 < answeredAt } ?? true })
            #expect(after.contains { $0.answeredAt == answeredAt })
            #expect(before.filter { $0.state == .answered }.count < after.filter { $0.state == .answered }.count)
            // Settled after the as-of time: still open then.
            let settledLater = Set(
                try fixture.connection.query("SELECT notification_uuid::text FROM clawback.refund_requests WHERE settled_at >= \(answeredAt)").rows
                    .map { try $0.decode(String.self, at: 0) })
            #expect(!settledLater.isEmpty)
            #expect(
                before.filter { settledLater.contains($0.notificationUUID) }.allSatisfy {
                    [RefundRequestState.received, .sending].contains($0.state)
                })
        }
    }
}
