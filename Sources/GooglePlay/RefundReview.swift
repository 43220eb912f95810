public import Foundation
import HTTP

/// The developer's answer to a chargeback under review, as `orders.reviewrefund` takes it
/// (`OrdersReviewRefundRequest` in androidpublisher v3's discovery document).
public struct RefundReviewAnswer: Sendable, Equatable, Codable {
    /// `REFUND_PREFERENCE_UNSPECIFIED` is not to be used, so it is not a case.
    public enum Preference: String, Sendable, Codable, CaseIterable {
        case decline = "DECLINE"
        case approve = "APPROVE"
        case neutral = "NEUTRAL"
    }

    /// One instance of the buyer using what they bought (`ConsumptionUsageEvent`).
    public struct UsageEvent: Sendable, Equatable, Codable {
        public var consumptionTime: String?
        public var consumptionItemDescription: String?
        public var obfuscatedAccountId: String?
        public var obfuscatedProfileId: String?

        public init(time: Date?, description: String?, obfuscatedAccountId: String?, obfuscatedProfileId: String? = nil) {
            consumptionTime = time.map { $0.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)) }
            consumptionItemDescription = description.map { String($0.prefix(RefundReviewAnswer.maximumDescription)) }
            self.obfuscatedAccountId = obfuscatedAccountId
            self.obfuscatedProfileId = obfuscatedProfileId
        }
    }

    /// Google rejects a list of more than 1,000 events.
    public static let maximumEvents = 1000
    /// Google's bound on an event's description, in characters.
    public static let maximumDescription = 5000

    public var pendingRefundToken: String
    public var refundPreference: Preference
    public var sampleContentProvided: Bool
    /// 0 to 100,000 (45,200 is 45.2%); nil when the game cannot say.
    public var consumptionPercentageMilliunits: Int?
    public var consumptionUsageEvents: [UsageEvent]?

    /// `usageEvents` beyond Google's 1,000 are left out, the latest kept (the ones nearest the chargeback),
    /// and the share is held to 0–100,000.
    public init(
        pendingRefundToken: String, preference: Preference, sampleContentProvided: Bool, consumedMilliunits: Int?, usageEvents: [UsageEvent] = []
    ) {
        self.pendingRefundToken = pendingRefundToken
        refundPreference = preference
        self.sampleContentProvided = sampleContentProvided
        consumptionPercentageMilliunits = consumedMilliunits.map { min(max($0, 0), 100_000) }
        consumptionUsageEvents = usageEvents.isEmpty ? nil : Array(usageEvents.suffix(Self.maximumEvents))
    }
}

/// How `orders.reviewrefund` ended. The answer must reach Google at most once, so only an answer that says
/// Google did not take the call lets it be sent again.
public enum RefundReviewOutcome: Sendable, Equatable {
    /// Google took the call (it keeps the first answer for a token and ignores later ones).
    case recorded
    /// Google refused it (400, 404, 401/403 after a fresh token): not sent again; a person reads why.
    case refused(status: Int, String)
    /// Google said it did not take the call (429, 503) or it never left (no connection, no token, the budget):
    /// it may be sent again, before the deadline.
    case notTaken(String)
    /// Unknown whether Google took it (the connection broke after sending, 500, 502, 504): never sent again.
    case unknown(String)
}

extension OrdersClient {
    /// Sends `answer` for the chargeback on `orderID`: asked again within this call only after answers that
    /// say Google did not take it (429 and 503), so that Google never gets it twice from here.
    public func reviewRefund(orderID: String, answer: RefundReviewAnswer) async -> RefundReviewOutcome {
        let body: [UInt8]
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            body = Array(try encoder.encode(answer))
        } catch {
            return .notTaken("the answer cannot be encoded: \(error)")
        }
        let result = await calls.post(
            calls.url("orders/" + URLEncoding.pathSegment(orderID) + ":reviewrefund"), json: body, askAgain: Self.notTaken)
        switch result {
        case .success: return .recorded
        case .failure(let error):
            switch error.kind {
            case .refused(let status, _) where Self.notTaken(error): return .notTaken("\(error) (status \(status))")
            case .refused(let status, _) where status >= 500 || status == 408 || status == 409: return .unknown("\(error)")
            case .refused(let status, _): return .refused(status: status, "\(error)")
            case .transport: return .unknown("\(error)")
            case .badKeyFile, .tokenRefused, .budgetSpent, .unreached: return .notTaken("\(error)")
            case .malformedAnswer: return .recorded
            }
        }
    }

    /// Failures that say Google did not take the call: 429, a 403 for a rate limit, 503, or a request that
    /// never left. (A 401 is asked again once with a fresh token by every call: Google refuses it unread.)
    @Sendable static func notTaken(_ error: GooglePlayError) -> Bool {
        switch error.kind {
        case .refused(let status, _): status == 429 || status == 503 || error.isRateLimit
        case .unreached: true
        case .transport, .badKeyFile, .tokenRefused, .malformedAnswer, .budgetSpent: false
        }
    }
}
