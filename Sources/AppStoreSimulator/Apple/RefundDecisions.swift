public import Foundation

/// How the simulated App Store decides a refund request, so that a studio can rehearse the effect of its
/// answer policy. Apple does not publish its model; this one is a documented stand-in: deterministic per
/// transaction and seed, more refunds when the developer says the purchase was not delivered or asks to
/// grant, fewer when it says the goods were consumed and asks to decline.
public enum RefundDecisions {
    /// Apple asks for an answer within 12 hours; the simulator decides an hour after that.
    public static let decisionDelay: TimeInterval = 13 * 3600

    static func due(_ request: RefundRequestRecord) -> Date { request.date + decisionDelay }

    /// The chance of a refund given the answer (nil: none received).
    static func refundChance(_ answer: ReceivedConsumptionAnswer.Body?) -> Double {
        guard let answer else { return 0.7 }
        if answer.deliveryStatus != "DELIVERED" { return 0.95 }
        let consumed = Double(answer.consumptionPercentage ?? 50_000) / 100_000
        switch answer.refundPreference {
        case "GRANT_FULL": return 0.9
        case "GRANT_PRORATED": return 0.85
        case "DECLINE": return max(0.05, 0.45 - 0.4 * consumed)
        default: return max(0.1, 0.7 - 0.5 * consumed)
        }
    }

    /// The decided transaction: its request marked, and the refund written when Apple grants it (prorated
    /// to what was not consumed when the developer asked for GRANT_PRORATED).
    static func decide(_ record: TransactionRecord, answer: ReceivedConsumptionAnswer.Body?, at when: Date, seed: UInt64) -> TransactionRecord {
        guard var request = record.refundRequest, request.decision == nil else { return record }
        var decided = record
        var hash = StableHash()
        hash.combine(seed)
        hash.combine("refund decision")
        hash.combine(record.transactionId)
        let granted = hash.unitInterval < refundChance(answer)
        request.decision = granted ? "REFUND" : "REFUND_DECLINED"
        request.decidedAt = when
        decided.refundRequest = request
        if granted {
            var refund = RefundRecord(date: when, reason: request.reason == "FULFILLMENT_ISSUE" ? 1 : 0)
            if answer?.refundPreference == "GRANT_PRORATED", let consumed = answer?.consumptionPercentage {
                refund.type = "REFUND_PRORATED"
                refund.percentage = 100_000 - consumed
            }
            decided.refund = refund
        }
        return decided
    }
}

/// A Send Consumption Information call the simulator accepted, as it received it.
public struct ReceivedConsumptionAnswer: Sendable, Codable, Equatable {
    public struct Body: Sendable, Codable, Hashable {
        public var customerConsented: Bool
        public var consumptionPercentage: Int32?
        public var deliveryStatus: String
        public var refundPreference: String?
        public var sampleContentProvided: Bool
    }

    public var transactionId: String
    public var bundleId: String
    public var environment: String
    public var receivedAt: Date
    public var body: Body
    /// The body's bytes as sent.
    public var raw: String
    /// Whether a CONSUMPTION_REQUEST for the transaction was open (sent, not yet decided) when this came.
    public var solicited: Bool
    /// Whether it came more than 12 hours after the request.
    public var late: Bool
}
