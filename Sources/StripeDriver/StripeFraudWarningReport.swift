import Foundation
import Reconciliation
import Reports
import Storage

/// Radar's early fraud warnings in finance's report (a `StoreReportTable` of Stripe's): a CSV with one row per
/// warning about a purchase of the window, the `stripe_fraud_warnings` section of the summary CSV per shop
/// and product, and a table of the HTML page. A warning moves no money: it tells finance which sales the
/// issuer reported as fraud, and whether a dispute followed (docs/finance.md, "Early fraud warnings (Stripe)").
enum StripeFraudWarningReport {
    static let columns = [
        "shop", "warning_id", "transaction_id", "product_id", "fraud_type", "warned_at", "purchased_at", "units_granted", "dispute_id",
        "dispute_outcome",
    ]

    static let table = StoreReportTable(
        fileSuffix: "stripe-fraud-warnings", title: "Early fraud warnings (Stripe)",
        note: "sales of the window the card's issuer reported as fraud; no money moved by the warning itself", columns: columns
    ) { store, window throws(ReportStore.Failure) in
        let lines = try store.reading {
            try StripeFraudWarningStore.reportLines(from: window.start, to: window.end, asOf: window.asOf, on: $0)
        }
        return StoreReportTable.Contents(
            rows: lines.map(row),
            summaryRows: FigureTable.summaryRows(totals(lines), section: "stripe_fraud_warnings", window: window.label, store: StripeStore.store),
            html: FigureTable.html(
                totals(lines), id: "stripe-fraud-warnings", empty: "Stripe reported no early fraud warning about purchases of this window.",
                columns: [(.warned, "Warned"), (.disputed, "Disputed"), (.lost, "Dispute lost"), (.notDisputed, "Not disputed")],
                units: (.notDisputed, "Units not disputed")))
    }

    static func row(_ line: StripeFraudWarningLine) -> [CSVField] {
        [
            .text(line.shop), .text(line.warningID), .text(line.paymentIntent), .optionalText(line.productID), .text(line.fraudType),
            .moment(line.warnedAt), .optionalMoment(line.purchasedAt), line.unitsGranted.map { .integer($0) } ?? .empty,
            .optionalText(line.disputeID), .optionalText(line.disputeOutcome),
        ]
    }

    enum Figure: String, CountedFigure {
        case warned
        case disputed
        case lost
        case notDisputed = "not_disputed"

        var note: String {
            switch self {
            case .warned: "early fraud warnings about the shop's granted payments (units: their units granted)"
            case .disputed: "warnings about a payment that was disputed (before or after the warning)"
            case .lost: "of those, disputes lost: the Stripe runs take the units back"
            case .notDisputed: "warnings no dispute followed (yet): the units stay with the player; clawback never refunds"
            }
        }

        func units(_ line: StripeFraudWarningLine) -> Int64 { line.unitsGranted ?? 0 }

        func counts(_ line: StripeFraudWarningLine) -> Bool {
            switch self {
            case .warned: true
            case .disputed: line.disputeID != nil
            case .lost: line.disputeOutcome == "lost"
            case .notDisputed: line.disputeID == nil
            }
        }
    }

    static func totals(_ lines: [StripeFraudWarningLine]) -> [AppProduct: [Figure: (count: Int, units: Int64)]] {
        FigureTable.totals(lines) { AppProduct(app: $0.shop, product: $0.productID ?? "") }
    }
}
