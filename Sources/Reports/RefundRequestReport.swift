import Reconciliation
public import Storage

/// The refund-request parts of a report: a detail CSV with one row per request, the `refund_requests`
/// section of the summary CSV, and a table of the HTML page, per app and product.
public enum RefundRequestReport {
    public static let columns = [
        "notification_uuid", "bundle_id", "environment", "transaction_id", "product_id", "reason", "requested_at", "deadline", "state",
        "answered_at", "answered_in_time", "delivery_status", "consumption_percentage_milli", "refund_preference", "units_granted",
        "units_consumed", "apple_error_code", "last_error", "apple_decision", "decided_at", "units_kept",
    ]

    public static func row(_ line: RefundRequestLine) -> [CSVField] {
        [
            .text(line.notificationUUID), .text(line.bundleID), .text(line.environment), .text(line.transactionID), .text(line.productID),
            .optionalText(line.reason), .moment(line.requestedAt), .moment(line.deadline),
            .text(line.state.rawValue), .optionalMoment(line.answeredAt), .text(line.answeredInTime ? "yes" : "no"),
            .optionalText(line.deliveryStatus), line.consumptionPercentage.map { .integer($0) } ?? .empty, .optionalText(line.refundPreference),
            line.unitsGranted.map { .integer($0) } ?? .empty, line.unitsConsumed.map { .integer($0) } ?? .empty,
            line.appleErrorCode.map { .integer($0) } ?? .empty, .optionalText(line.lastError), .optionalText(line.outcome?.rawValue),
            .optionalMoment(line.outcomeAt), .integer(line.unitsKept),
        ]
    }

    /// The figures per (app, product), in this order.
    public enum Figure: String, CountedFigure {
        case received
        case answered
        case answeredInTime = "answered_in_time"
        case notConsented = "not_consented"
        case unanswerable
        case refused
        case expired
        case open
        case declinedByApple = "declined_by_apple"
        case refundedByApple = "refunded_by_apple"
        case undecided

        public var note: String {
            switch self {
            case .received: "CONSUMPTION_REQUEST notifications Apple sent about purchases of the window"
            case .answered: "answers Apple accepted (202)"
            case .answeredInTime: "answers Apple accepted within its 12 hours"
            case .notConsented: "not answered: the app has no customer consent (as Apple asks)"
            case .unanswerable: "not answered: the game cannot tell whether it delivered (the detail says why)"
            case .refused: "answers Apple refused (its error code is in the detail)"
            case .expired: "the 12 hours passed without an answer Apple accepted"
            case .open: "still within the 12 hours, not answered yet"
            case .declinedByApple: "Apple declined the refund (REFUND_DECLINED): units = units that stayed with the player"
            case .refundedByApple: "Apple refunded (REFUND): the monthly run claws these back"
            case .undecided: "Apple has not decided yet"
            }
        }

        /// The units kept for `declinedByApple`, the units granted otherwise.
        public func units(_ line: RefundRequestLine) -> Int64 { self == .declinedByApple ? line.unitsKept : line.unitsGranted ?? 0 }

        public func counts(_ line: RefundRequestLine) -> Bool {
            switch self {
            case .received: true
            case .answered: line.state == .answered
            case .answeredInTime: line.state == .answered && line.answeredInTime
            case .notConsented: line.state == .notConsented
            case .unanswerable: line.state == .unanswerable
            case .refused: line.state == .refused
            case .expired: line.state == .expired
            case .open: line.state == .received || line.state == .sending
            case .declinedByApple: line.outcome == .declined
            case .refundedByApple: line.outcome == .refunded
            case .undecided: line.outcome == nil
            }
        }
    }

    /// (count, units) per figure, per app and product; units are the units kept for `declinedByApple` and
    /// the units granted otherwise.
    public static func totals(_ lines: [RefundRequestLine]) -> [AppProduct: [Figure: (count: Int, units: Int64)]] {
        FigureTable.totals(lines) { AppProduct(app: $0.bundleID, product: $0.productID) }
    }

    /// The summary CSV's `refund_requests` rows: every figure of every app and product with a request.
    public static func summaryRows(_ lines: [RefundRequestLine], window: String) -> [[CSVField]] {
        FigureTable.summaryRows(totals(lines), section: "refund_requests", window: window, store: .appStore)
    }

    static func htmlTable(_ lines: [RefundRequestLine]) -> String {
        FigureTable.html(
            totals(lines), id: "refund-requests", empty: "Apple sent no refund requests about purchases of this window.",
            columns: [
                (.received, "Received"), (.answered, "Answered"), (.answeredInTime, "In time"), (.notConsented, "No consent"),
                (.unanswerable, "Cannot answer"), (.refused, "Refused"), (.expired, "Expired"), (.open, "Open"),
                (.declinedByApple, "Declined by Apple"), (.refundedByApple, "Refunded"),
            ], units: (.declinedByApple, "Units kept"))
    }
}
