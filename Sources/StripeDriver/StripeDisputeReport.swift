import Foundation
import Reconciliation
import Reports
import Storage
import Stripe

/// The web shop's disputes in finance's report, Stripe's part of it (`StoreReportTable`): a CSV with one
/// row per dispute about a purchase of the window, the `stripe_disputes` section of the summary CSV per shop
/// and product (received, answered, left, won, lost, …) with the amounts lost and the dispute fees per
/// currency, and a table of the HTML page (docs/finance.md, "Disputes (Stripe)").
enum StripeDisputeReport {
    static let columns = [
        "shop", "dispute_id", "transaction_id", "product_id", "kind", "reason", "amount", "currency", "purchased_at", "disputed_at", "due_by",
        "state", "why", "submitted_at", "submitted_in_time", "units_granted", "units_consumed", "usage_events", "outcome", "outcome_read_at",
        "dispute_fee", "fee_currency", "fee_status", "escalated_at",
    ]

    static let table = StoreReportTable(
        fileSuffix: "stripe-disputes", title: "Disputes (Stripe)",
        note: "the web shop's disputes about purchases of the window, the evidence clawback submitted, and what they came to",
        columns: columns
    ) { store, window throws(ReportStore.Failure) in
        let lines = try store.reading {
            try StripeDisputeStore.reportLines(from: window.start, to: window.end, asOf: window.asOf, on: $0)
        }
        return StoreReportTable.Contents(rows: lines.map(row), summaryRows: summaryRows(lines, window: window.label), html: html(lines))
    }

    /// An amount in `currency`'s minor unit as a decimal in its major unit ("12.34", "1500" for JPY).
    static func amount(_ minor: Int64, _ currency: String) -> String {
        StripeCurrency.milli(minor: minor, currency: currency).map { Money.format(milli: $0, currency: currency.uppercased()) } ?? String(minor)
    }

    static func row(_ line: StripeDisputeLine) -> [CSVField] {
        [
            .text(line.shop), .text(line.disputeID), .optionalText(line.paymentIntent), .optionalText(line.productID),
            .text(line.inquiry ? "inquiry" : "chargeback"), .optionalText(line.reason), .number(amount(line.amountMinor, line.currency)),
            .text(line.currency.uppercased()), .optionalMoment(line.purchasedAt), .optionalMoment(line.disputedAt), .optionalMoment(line.dueBy),
            .text(line.state), .optionalText(line.why), .optionalMoment(line.submittedAt), .text(line.submittedInTime ? "yes" : "no"),
            line.unitsGranted.map { .integer($0) } ?? .empty, line.unitsConsumed.map { .integer($0) } ?? .empty,
            line.usageEvents.map { .integer($0) } ?? .empty, .optionalText(line.outcome), .optionalMoment(line.outcomeReadAt),
            line.fee.map { .number(amount($0.minor, $0.currency)) } ?? .empty, .optionalText(line.fee?.currency.uppercased()),
            .text(line.outcome == nil ? "" : line.feeUnknown ? "unknown" : line.fee == nil ? "none" : "charged"),
            .optionalMoment(line.escalatedAt),
        ]
    }

    /// The figures per shop and product, in this order.
    enum Figure: String, CountedFigure {
        case received
        case inquiries
        case escalated
        case answered
        case answeredInTime = "answered_in_time"
        case left
        case closed
        case observed
        case refused
        case open
        case won
        case lost

        var note: String {
            switch self {
            case .received: "disputes of the shop's payments clawback saw (chargebacks and inquiries)"
            case .inquiries: "inquiries: the bank asked, no money moved yet"
            case .escalated: "inquiries the bank escalated to a chargeback (counted as chargebacks, answered again as one)"
            case .answered: "disputes clawback submitted the game's evidence for"
            case .answeredInTime: "submitted before Stripe's due_by"
            case .left: "left by policy (no grant, no response allowed, too near the deadline): the detail's why says which"
            case .closed: "not clawback's to answer: answered in the Dashboard, no longer awaiting a response, or unknown to Stripe"
            case .observed: "kept for finance: not awaiting a response when first seen (lost or won without one, an inquiry closed)"
            case .refused: "Stripe refused the evidence (the detail's why has Stripe's message): for a person"
            case .open: "awaiting clawback's answer (decided, staged or not yet)"
            case .won: "the bank decided for the studio: units = units the studio kept"
            case .lost: "the bank decided for the buyer: units = the grant's, which the Stripe runs take back"
            }
        }

        func units(_ line: StripeDisputeLine) -> Int64 { line.unitsGranted ?? 0 }

        func counts(_ line: StripeDisputeLine) -> Bool {
            switch self {
            case .received: true
            case .inquiries: line.inquiry
            case .escalated: line.escalatedAt != nil
            case .answered: line.state == "submitted"
            case .answeredInTime: line.state == "submitted" && line.submittedInTime
            case .left: line.state == "left"
            case .closed: line.state == "closed"
            case .observed: line.state == "observed"
            case .refused: line.state == "refused"
            case .open: ["open", "stored", "staged"].contains(line.state)
            case .won: line.outcome == "won"
            case .lost: line.outcome == "lost"
            }
        }
    }

    static func totals(_ lines: [StripeDisputeLine]) -> [AppProduct: [Figure: (count: Int, units: Int64)]] {
        FigureTable.totals(lines) { AppProduct(app: $0.shop, product: $0.productID ?? "") }
    }

    /// Money per currency: the amounts of the disputes lost, and the fees Stripe's balance transactions state
    /// (net of any returned), each in its own currency (the fee's is the account's settlement currency).
    static func money(_ lines: [StripeDisputeLine]) -> [(key: String, currency: String, count: Int, minor: Int64)] {
        var lost: [String: (Int, Int64)] = [:]
        var fees: [String: (Int, Int64)] = [:]
        let unknown = lines.filter { $0.outcome != nil && $0.feeUnknown }.count
        for line in lines {
            if line.outcome == "lost" {
                let sum = lost[line.currency] ?? (0, 0)
                lost[line.currency] = (sum.0 + 1, sum.1 &+ line.amountMinor)
            }
            if let fee = line.fee {
                let sum = fees[fee.currency] ?? (0, 0)
                fees[fee.currency] = (sum.0 + 1, sum.1 &+ fee.minor)
            }
        }
        return lost.sorted { $0.key < $1.key }.map { ("lost_amount", $0.key, $0.value.0, $0.value.1) }
            + fees.sorted { $0.key < $1.key }.map { ("dispute_fees", $0.key, $0.value.0, $0.value.1) }
            + (unknown == 0 ? [] : [("dispute_fees_unknown", "", unknown, 0)])
    }

    static func summaryRows(_ lines: [StripeDisputeLine], window: String) -> [[CSVField]] {
        var rows = FigureTable.summaryRows(totals(lines), section: "stripe_disputes", window: window, store: StripeStore.store)
        for item in money(lines) {
            let note =
                switch item.key {
                case "lost_amount": "disputes lost: the amount the bank took back, in the dispute's currency"
                case "dispute_fees":
                    "the dispute fees of the disputes with an outcome, net of any Stripe returned, in the account's settlement currency"
                default: "disputes with an outcome whose fee could not be read: not in dispute_fees (read again for 30 days)"
                }
            let money: CSVField = item.currency.isEmpty ? .empty : .number(amount(item.minor, item.currency))
            rows.append([
                .text(window), .text("stripe_disputes"), .text(item.key), .empty, .text(item.currency.uppercased()), .integer(item.count), .empty,
                money, .text(note), .empty, .text(StripeStore.store.rawValue),
            ])
        }
        return rows
    }

    static func html(_ lines: [StripeDisputeLine]) -> String {
        var html = FigureTable.html(
            totals(lines), id: "stripe-disputes", empty: "No dispute of the web shop's payments is about purchases of this window.",
            columns: [
                (.received, "Received"), (.inquiries, "Inquiries"), (.escalated, "Escalated"), (.answered, "Answered"), (.answeredInTime, "In time"),
                (.left, "Left"),
                (.closed, "Closed"), (.observed, "Observed"), (.refused, "Refused"), (.open, "Open"), (.won, "Won"), (.lost, "Lost"),
            ], units: (.won, "Units kept"))
        let money = money(lines)
        guard !money.isEmpty else { return html }
        html += "<table id=\"stripe-dispute-money\"><thead><tr><th>Figure</th><th>Currency</th><th class=\"num\">Disputes</th>"
        html += "<th class=\"num\">Amount</th></tr></thead><tbody>\n"
        for item in money {
            let figure =
                switch item.key {
                case "lost_amount": "Lost to the buyer's bank"
                case "dispute_fees": "Dispute fees (net)"
                default: "Dispute fees not readable"
                }
            let money = item.currency.isEmpty ? "" : amount(item.minor, item.currency)
            html += "<tr><td>\(HTMLSummary.escape(figure))</td><td>\(HTMLSummary.escape(item.currency.uppercased()))</td>"
            html += "<td class=\"num\">\(item.count)</td><td class=\"num\">\(HTMLSummary.escape(money))</td></tr>\n"
        }
        return html + "</tbody></table>\n"
    }
}
