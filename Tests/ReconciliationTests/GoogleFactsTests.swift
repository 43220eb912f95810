import Foundation
import Reconciliation
import Testing

/// The rules as they meet Google's statements: a share given as a ratio (exact units), a chargeback or fraud
/// taking everything back under its own type, and Google's review cases never moving units.
@Suite("Verdict rules: Google's statements")
struct GoogleFactsTests {
    static let grant = Grant(
        transactionID: "google-token-1", bundleID: "com.studio.game", productID: "gems_100", playerID: "player-1", quantity: 3,
        unitsGranted: 300, purchasedAt: Date(timeIntervalSince1970: 1_790_000_000), store: .googlePlay, orderID: "GPA.1")

    static func facts(_ type: String?, share: RefundedShare? = nil) -> AppleFacts {
        AppleFacts(
            transactionID: grant.transactionID, environment: "Production", bundleID: grant.bundleID, productID: grant.productID,
            quantity: grant.quantity, reportsAppAccountToken: false,
            revocationDate: type == nil ? nil : Date(timeIntervalSince1970: 1_790_500_000), revocationType: type,
            revocationPercentage: share?.percentageMilli, refundedShare: share)
    }

    func decide(_ answer: AppleAnswer, ledger: LedgerHistory = .init(), policy: ReconciliationPolicy = .init()) -> Decision {
        Reconciler.decide(grant: Self.grant, answer: answer, ledger: ledger, policy: policy)
    }

    @Test("a share is exact where its milli-percent would round first: 1 of 3 units rounded down is 100 of 300, not 99")
    func exactShare() {
        let share = RefundedShare(1, of: 3)
        #expect(share.percentageMilli == 33_333)
        let decision = decide(.verified(Self.facts("REFUND_PRORATED", share: share)), policy: ReconciliationPolicy(rounding: .down))
        #expect(decision.verdict == .refunded && decision.entry?.units == 100)
        #expect(decision.detail?.contains("REFUND_PRORATED 1/3: 100 of 300 units") == true)
        #expect(ProratedUnits.compute(units: 300, percentageMilli: 33_333, rule: .down) == 99)
    }

    @Test("units × share agrees with 128-bit arithmetic for every rounding rule, at any size")
    func shareProperty() {
        // Seeded, so that a failure names a case that can be run again.
        var random = SplitMix(state: 0x5EED_CAFE)
        for _ in 0..<20_000 {
            let units = Int64.random(in: 1...(Bool.random(using: &random) ? 10_000 : Int64.max / 2), using: &random)
            let denominator = Int64.random(in: 1...(Bool.random(using: &random) ? 100 : Int64.max / 3), using: &random)
            let numerator = Int64.random(in: 0...denominator, using: &random)
            let product = Int128(units) * Int128(numerator)
            let (quotient, remainder) = (product / Int128(denominator), product % Int128(denominator))
            let twice = 2 * remainder
            for rule in RoundingRule.allCases {
                let expected: Int128 =
                    switch rule {
                    case .down: quotient
                    case .up: remainder > 0 ? quotient + 1 : quotient
                    case .nearestHalfUp: twice >= Int128(denominator) ? quotient + 1 : quotient
                    case .nearestHalfEven:
                        twice > Int128(denominator) || (twice == Int128(denominator) && quotient % 2 == 1) ? quotient + 1 : quotient
                    }
                let got = ProratedUnits.compute(units: units, share: RefundedShare(numerator, of: denominator), rule: rule)
                #expect(Int128(got) == expected, "\(units) × \(numerator)/\(denominator) \(rule)")
            }
        }
    }

    @Test("a share that is not partial goes to a person, never a full clawback")
    func wholeShareIsReviewed() {
        for share in [RefundedShare(3, of: 3), RefundedShare(0, of: 3), RefundedShare(4, of: 3), RefundedShare(1, of: 0)] {
            let decision = decide(.verified(Self.facts("REFUND_PRORATED", share: share)))
            #expect(decision.action == .flaggedForReview && decision.units == 0 && decision.entry?.units == 0)
        }
    }

    @Test("a chargeback and a fraud take every unit back, under their own type", arguments: ["CHARGEBACK", "FRAUD", "REFUND_FULL"])
    func fullTypes(type: String) {
        let decision = decide(.verified(Self.facts(type)))
        #expect(decision.verdict == .refunded && decision.action == .clawbackCreated && decision.entry?.units == 300)
        // Apple has no such types: for an App Store grant they are a type this version does not know.
        var apple = Self.grant
        apple.store = .appStore
        let fromApple = Reconciler.decide(grant: apple, answer: .verified(Self.facts(type)), ledger: .init())
        #expect(fromApple.action == (type == "REFUND_FULL" ? .clawbackCreated : .flaggedForReview))
    }

    @Test("Google's review cases flag a person and move no units, whatever the policy for unknown purchases", arguments: StoreReview.allCases)
    func reviews(kind: StoreReview) {
        let decision = decide(.review(kind, detail: "why"), policy: ReconciliationPolicy(clawBackUnknownToApple: true))
        #expect(decision.action == .flaggedForReview && decision.units == 0)
        #expect(decision.entry == LedgerEntryDraft(kind: .review, idempotencyKey: "review:" + kind.rawValue, units: 0, reason: kind.rawValue))
        #expect(decision.verdict == (kind == .unknownToGoogle ? .unknownToGoogle : .mismatch))
        let again = decide(
            .review(kind, detail: "why"),
            ledger: LedgerHistory([LedgerEntry(entryID: 1, kind: .review, idempotencyKey: "review:" + kind.rawValue, units: 0)]))
        #expect(again.action == .alreadyRecorded && again.entry == nil)
    }
}

/// SplitMix64: a seeded generator, so that a property's cases are the same on every run.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
