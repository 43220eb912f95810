import Reconciliation
public import Storage

/// Google Play's chargeback reviews in a report, beside Apple's refund requests: a detail CSV with one row
/// per review, the `chargeback_reviews` section of the summary CSV, and a table of the HTML page, per app and
/// product (docs/google-play.md, section 9).
public enum ChargebackReviewReport {
    public static let columns = [
        "package_name", "order_id", "transaction_id", "product_id", "notified_at", "deadline", "state", "answered_at", "answered_in_time",
        "refund_preference", "consumption_percentage_milli", "usage_events", "units_granted", "units_consumed", "reason", "google_status",
        "last_error", "outcome", "outcome_read_at", "set_aside_reason",
    ]

    public static func row(_ line: ChargebackReviewLine) -> [CSVField] {
        [
            .text(line.packageName), .text(line.orderID), .optionalText(line.transactionID), .optionalText(line.productID),
            .moment(line.notifiedAt), .moment(line.deadline), .text(line.state), .optionalMoment(line.answeredAt),
            .text(line.answeredInTime ? "yes" : "no"), .optionalText(line.refundPreference), line.consumedMilliunits.map { .integer($0) } ?? .empty,
            line.usageEvents.map { .integer($0) } ?? .empty, line.unitsGranted.map { .integer($0) } ?? .empty,
            line.unitsConsumed.map { .integer($0) } ?? .empty, .optionalText(line.reason), line.googleStatus.map { .integer($0) } ?? .empty,
            .optionalText(line.lastError), .optionalText(line.outcome), .optionalMoment(line.outcomeReadAt), .optionalText(line.setAsideReason),
        ]
    }

    /// The figures per (app, product), in this order.
    public enum Figure: String, CountedFigure {
        case received
        case answered
        case answeredInTime = "answered_in_time"
        case declineAsked = "decline_asked"
        case approveAsked = "approve_asked"
        case neutralAsked = "neutral_asked"
        case unanswerable
        case refused
        case unknown
        case expired
        case open
        case setAside = "set_aside"
        case chargebackLost = "chargeback_lost"
        case chargebackWon = "chargeback_won"

        public var note: String {
            switch self {
            case .received: "chargebacks Google asked the studio to review (pendingRefundReviewNotification)"
            case .answered: "answers Google took (orders.reviewrefund)"
            case .answeredInTime: "answers Google took within its 24 hours"
            case .declineAsked: "answers asking Google to decline the chargeback"
            case .approveAsked: "answers asking Google to grant it (not delivered, or nothing consumed)"
            case .neutralAsked: "answers stating no preference (part consumed, or consumption unknown)"
            case .unanswerable: "not answered: the game cannot tell whether it delivered, or Google does not know the order"
            case .refused: "answers Google refused (its status is in the detail)"
            case .unknown: "sent, but Google was never seen to take it before the deadline's margin (the Play Console shows whether it has it)"
            case .expired: "the 24 hours passed without an answer sent"
            case .open: "still within the 24 hours, not answered yet"
            case .setAside: "open and set aside: the game's hooks gave no usable facts (the detail's set_aside_reason says why); tried again each run"
            case .chargebackLost: "the order shows a refund: units = the grant's, which the Google runs take back"
            case .chargebackWon: "the order still processed 30 days after the deadline: units = units kept by the studio"
            }
        }

        /// The grant's units (for `chargebackWon`, the units the studio kept).
        public func units(_ line: ChargebackReviewLine) -> Int64 { line.unitsGranted ?? 0 }

        public func counts(_ line: ChargebackReviewLine) -> Bool {
            switch self {
            case .received: true
            case .answered: line.state == "answered"
            case .answeredInTime: line.state == "answered" && line.answeredInTime
            case .declineAsked: line.state == "answered" && line.refundPreference == "DECLINE"
            case .approveAsked: line.state == "answered" && line.refundPreference == "APPROVE"
            case .neutralAsked: line.state == "answered" && line.refundPreference == "NEUTRAL"
            case .unanswerable: line.state == "unanswerable"
            case .refused: line.state == "refused"
            case .unknown: line.state == "unknown"
            case .expired: line.state == "expired"
            case .open: ["open", "stored", "sending"].contains(line.state)
            case .setAside: line.state == "open" && line.setAsideReason != nil
            case .chargebackLost: line.outcome == "refunded"
            case .chargebackWon: line.outcome == "not_refunded"
            }
        }
    }

    /// (count, units granted) per figure, per app and product.
    public static func totals(_ lines: [ChargebackReviewLine]) -> [AppProduct: [Figure: (count: Int, units: Int64)]] {
        FigureTable.totals(lines) { AppProduct(app: $0.packageName, product: $0.productID ?? "") }
    }

    /// The summary CSV's `chargeback_reviews` rows: every figure of every app and product with a review.
    public static func summaryRows(_ lines: [ChargebackReviewLine], window: String) -> [[CSVField]] {
        FigureTable.summaryRows(totals(lines), section: "chargeback_reviews", window: window, store: .googlePlay)
    }

    static func htmlTable(_ lines: [ChargebackReviewLine]) -> String {
        FigureTable.html(
            totals(lines), id: "chargeback-reviews", empty: "Google asked for no chargeback review about purchases of this window.",
            columns: [
                (.received, "Received"), (.answered, "Answered"), (.answeredInTime, "In time"), (.declineAsked, "Decline asked"),
                (.unanswerable, "Cannot answer"), (.refused, "Refused"), (.unknown, "Unknown"), (.expired, "Expired"), (.open, "Open"),
                (.setAside, "Set aside"),
                (.chargebackLost, "Lost"), (.chargebackWon, "Won"),
            ], units: (.chargebackWon, "Units kept"))
    }
}
