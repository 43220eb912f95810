public import Foundation

/// `orders.reviewrefund` (`POST .../orders/{orderId}:reviewrefund`): the developer's answer to a chargeback
/// under review, validated as Google's discovery document describes `OrdersReviewRefundRequest`: the token
/// from the notification, `refundPreference` DECLINE, APPROVE or NEUTRAL, `sampleContentProvided` a boolean,
/// `consumptionPercentageMilliunits` 0 to 100,000, at most 1,000 `consumptionUsageEvents`. Google records
/// the first call for a token and ignores later ones; the answer is due within 24 hours of the notification.
///
/// Where Google is silent the simulator chooses: a token that is not this order's pending review is 400
/// `INVALID_ARGUMENT`, an answer after the 24 hours is 400 `FAILED_PRECONDITION`, and an unknown field is 400
/// (as Google's front end refuses unknown JSON names).
extension GooglePlaySimulator {
    static let reviewWindow: TimeInterval = 24 * 3600
    static let maximumUsageEvents = 1000
    static let maximumItemDescription = 5000

    func reviewRefund(_ request: SimulatorRequest, orderID: String, packageName: String, world: GooglePlayWorld) -> SimulatorReply {
        func invalid(_ message: String, status: String = "INVALID_ARGUMENT") -> SimulatorReply {
            Self.googleError(400, status, status == "INVALID_ARGUMENT" ? "invalidValue" : "failedPrecondition", message)
        }
        guard let fields = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return invalid("Invalid JSON payload received.")
        }
        let known: Set = [
            "pendingRefundToken", "refundPreference", "sampleContentProvided", "consumptionPercentageMilliunits", "consumptionUsageEvents",
        ]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            return invalid("Invalid JSON payload received. Unknown name \"\(unknown)\": Cannot find field.")
        }
        let body: ReviewRefundBody
        do {
            body = try JSONDecoder().decode(ReviewRefundBody.self, from: Data(request.body))
        } catch {
            return invalid("Invalid JSON payload received: \(error)")
        }
        guard let token = body.pendingRefundToken, !token.isEmpty else { return invalid("pendingRefundToken is required.") }
        guard let preference = body.refundPreference, ["DECLINE", "APPROVE", "NEUTRAL"].contains(preference) else {
            return invalid("refundPreference must be DECLINE, APPROVE or NEUTRAL.")
        }
        guard let sample = body.sampleContentProvided else { return invalid("sampleContentProvided is required.") }
        if let share = body.consumptionPercentageMilliunits, !(0...100_000).contains(Int(share)) {
            return invalid("consumptionPercentageMilliunits must be between 0 and 100000.")
        }
        let events = body.consumptionUsageEvents ?? []
        guard events.count <= Self.maximumUsageEvents else { return invalid("consumptionUsageEvents holds more than 1000 events.") }
        for (index, event) in events.enumerated() {
            if let problem = event.problem { return invalid("consumptionUsageEvents[\(index)]: \(problem)") }
        }
        guard let order = world.orders[orderID], order.packageName == packageName else {
            return Self.googleError(404, "NOT_FOUND", "notFound", "Order not found.")
        }
        guard let review = order.refundReview, review.pendingRefundToken == token else {
            return invalid("The pending refund token is not valid for this order.")
        }
        let now = clock()
        let accepted = reviewAnswers.withLock { answers -> Bool in
            if var recorded = answers[token] {
                // Google keeps the first answer and ignores the rest.
                recorded.calls += 1
                recorded.bodies.insert(String(decoding: request.body, as: UTF8.self))
                answers[token] = recorded
                return true
            }
            guard now <= review.notifiedAt + Self.reviewWindow else { return false }
            answers[token] = ReceivedReviewAnswer(
                orderID: orderID, packageName: packageName, preference: preference, sampleContentProvided: sample,
                consumptionMilliunits: body.consumptionPercentageMilliunits.map(Int.init), usageEvents: events.count, receivedAt: now, calls: 1,
                bodies: [String(decoding: request.body, as: UTF8.self)])
            return true
        }
        guard accepted else { return invalid("The refund review window for this order has closed.", status: "FAILED_PRECONDITION") }
        return .json(200, Array("{}".utf8))
    }
}

/// `OrdersReviewRefundRequest` with the types its discovery document gives (a number where a boolean is
/// due, or the reverse, does not decode).
struct ReviewRefundBody: Decodable {
    var pendingRefundToken: String?
    var refundPreference: String?
    var sampleContentProvided: Bool?
    var consumptionPercentageMilliunits: Int32?
    var consumptionUsageEvents: [UsageEvent]?

    struct UsageEvent: Decodable {
        struct Location: Decodable {
            var regionCode: String?
            var administrativeArea: String?
            var locality: String?
            var sublocality: String?
        }
        var consumptionItemDescription: String?
        var consumptionTime: String?
        var ipAddress: String?
        var location: Location?
        var obfuscatedAccountId: String?
        var obfuscatedProfileId: String?

        /// Why this is not a `ConsumptionUsageEvent` as Google describes it, or nil.
        var problem: String? {
            if let text = consumptionItemDescription, text.count > GooglePlaySimulator.maximumItemDescription {
                return "consumptionItemDescription is longer than 5000 characters"
            }
            if let time = consumptionTime,
                (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(time)) == nil
                    && (try? Date.ISO8601FormatStyle().parse(time)) == nil
            {
                return "consumptionTime is not an RFC 3339 time"
            }
            if let location, (location.regionCode ?? "").isEmpty { return "location.regionCode is required" }
            return nil
        }
    }
}

/// An answer Google recorded for a pending refund token: the first call's, and how many calls came.
public struct ReceivedReviewAnswer: Sendable, Equatable {
    public var orderID: String
    public var packageName: String
    public var preference: String
    public var sampleContentProvided: Bool
    public var consumptionMilliunits: Int?
    public var usageEvents: Int
    public var receivedAt: Date
    /// Every call for the token, the first (the one Google keeps) and those it ignored.
    public var calls: Int
    /// The distinct bodies sent for the token: one when every call carried the same answer.
    public var bodies: Set<String>
}
