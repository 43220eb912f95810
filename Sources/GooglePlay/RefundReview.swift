public import Foundation
import HTTP
import Locking

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

/// How `orders.reviewrefund` ended.
///
/// Google records the first call in response to a notification and ignores later ones, still answering OK
/// (developer.android.com/google/play/billing/provide-refund-and-chargeback-suggestions). So the same stored
/// answer may be sent again after any failure without making a second answer: what matters is only whether
/// Google has taken it yet.
public enum RefundReviewOutcome: Sendable, Equatable {
    /// Google took the call (it keeps the first answer for a token and ignores later ones).
    case recorded
    /// Google read the answer and will not take it (400: the token, the window, a field; 404: the order):
    /// final, a person reads why.
    case refused(status: Int, String)
    /// Google did not take the call: 429 or 503, a refused permission or credentials (401, 403: the studio can
    /// fix it before the deadline), or it never left (no connection, no token, the budget). Sent again.
    case notTaken(status: Int?, String)
    /// Google may have taken it (the connection broke after sending, 500, 502, 504): sent again, since a
    /// second call cannot make a second answer; `unknown` only if the deadline's margin comes first.
    case unconfirmed(String)
}

extension OrdersClient {
    /// Sends `answer` for the chargeback on `orderID`, asked again within this call after every failure worth
    /// asking again (Google keeps only the first answer, so a repeat is harmless).
    public func reviewRefund(orderID: String, answer: RefundReviewAnswer) async -> RefundReviewOutcome {
        let body: [UInt8]
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            body = Array(try encoder.encode(answer))
        } catch {
            return .notTaken(status: nil, "the answer cannot be encoded: \(error)")
        }
        // Whether any attempt may have reached Google: the call's last failure alone cannot say (a 500, then
        // a 503, ends as "not taken" though the first may have been).
        let reached = Locked(false)
        let result = await calls.post(
            calls.url("orders/" + URLEncoding.pathSegment(orderID) + ":reviewrefund"), json: body,
            askAgain: { error in
                if Self.mayHaveReached(error) { reached.withLock { $0 = true } }
                return error.isTransient
            })
        switch result {
        case .success: return .recorded
        case .failure(let error):
            let outcome = Self.outcome(of: error)
            guard reached.withLock({ $0 }) else { return outcome }
            switch outcome {
            case .notTaken(_, let why), .refused(_, let why):
                return .unconfirmed("an earlier try may have reached Google; the last: \(why)")
            case .recorded, .unconfirmed: return outcome
            }
        }
    }

    /// Whether a failed call may have reached Google and been taken: the connection broke after sending, or
    /// Google's front end answered for a back end that may have acted (5xx but 503, 408, 409), or an answer
    /// came that the client did not read.
    static func mayHaveReached(_ error: GooglePlayError) -> Bool {
        switch error.kind {
        case .transport, .answerTooLarge: true
        case .refused(let status, _): (status >= 500 && status != 503) || status == 408 || status == 409
        case .unreached, .badKeyFile, .tokenRefused, .malformedAnswer, .budgetSpent: false
        }
    }

    /// What a failed `orders.reviewrefund` says of the answer.
    static func outcome(of error: GooglePlayError) -> RefundReviewOutcome {
        switch error.kind {
        case .refused(let status, _) where status == 429 || status == 503 || error.isRateLimit: .notTaken(status: status, "\(error)")
        case .refused(let status, _) where status == 401 || status == 403: .notTaken(status: status, "\(error)")
        case .refused(let status, _) where status >= 500 || status == 408 || status == 409: .unconfirmed("\(error)")
        case .refused(let status, _): .refused(status: status, "\(error)")
        case .transport, .answerTooLarge: .unconfirmed("\(error)")
        case .badKeyFile, .tokenRefused, .budgetSpent, .unreached: .notTaken(status: nil, "\(error)")
        // A 2xx whose body is not Google's empty object: Google took the call.
        case .malformedAnswer: .recorded
        }
    }
}

/// What the answering probe of `config check` learnt.
public enum AnsweringAccess: Sendable, Equatable {
    /// Google looked for the probe's order (404 `notFound`) or read its body (400): not refused. Google does not
    /// document that it checks the permission before it looks for the order, so this is not proof.
    case notRefused
    /// Google refused the account (401 `permissionDenied`, 403): the answers would be refused alike.
    case refused(GooglePlayError.Kind, String)
    /// Google's answer proves neither (a 5xx, no connection): said plainly, not guessed.
    case unproven(String)
}

extension OrdersClient {
    /// The order id the probe names: not of Google's `GPA.dddd-dddd-dddd-ddddd` form, so no purchase has it.
    static let probeOrderID = "GPA.0000-clawback-config-check"

    /// Whether this account may answer chargeback reviews, changing nothing at Google: `orders.reviewrefund`
    /// for an order id no purchase has, with a pending refund token no notification carried. No review can
    /// take that answer (Google keeps answers per pending refund token, and this one opens none), so Google
    /// can only refuse it; how it refuses tells whether the account was let through to the order.
    public func checkAnswering() async -> AnsweringAccess {
        let answer = RefundReviewAnswer(
            pendingRefundToken: "clawback-config-check", preference: .neutral, sampleContentProvided: false, consumedMilliunits: nil)
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(answer))
        } catch {
            return .unproven("the probe cannot be encoded: \(error)")
        }
        let result = await calls.post(
            calls.url("orders/" + URLEncoding.pathSegment(Self.probeOrderID) + ":reviewrefund"), json: body, askAgain: { _ in false })
        switch result {
        case .success:
            return .unproven("Google took an answer for an order no purchase has: the endpoint is not Google's")
        case .failure(let error):
            switch error.kind {
            case .refused(404, "notFound"), .refused(400, _): return .notRefused
            case .refused(401, _): return .refused(error.kind, "\(error)")
            case .refused(403, _) where !error.isRateLimit: return .refused(error.kind, "\(error)")
            default: return .unproven("\(error)")
            }
        }
    }
}
