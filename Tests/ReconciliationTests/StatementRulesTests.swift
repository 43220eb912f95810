import Foundation
import Reconciliation
import Testing

/// The rules as they meet statements beyond the App Store's (a Google Play grant here): a share given as a ratio
/// (exact units), a chargeback or fraud taking everything back under its own kind, a store's review reasons and
/// inconclusive "not found" never moving units, and a refund that shrinks where the store documents no reduction.
@Suite("Verdict rules: shares, kinds and reviews of any store")
struct StatementRulesTests {
    static let grant = Grant(
        transactionID: "google-token-1", bundleID: "com.studio.game", productID: "gems_100", playerID: "player-1", quantity: 3,
        unitsGranted: 300, purchasedAt: Date(timeIntervalSince1970: 1_790_000_000), store: .googlePlay, orderID: "GPA.1")

    static func facts(_ kind: RefundKind?, share: RefundedShare? = nil) -> StoreStatement {
        StoreStatement(
            transactionID: grant.transactionID, environment: .production, bundleID: grant.bundleID, productID: grant.productID,
            quantity: grant.quantity, reportsAppAccountToken: false,
            revocationDate: kind == nil ? nil : Date(timeIntervalSince1970: 1_790_500_000), refundKind: kind,
            revocationPercentage: share?.percentageMilli, refundedShare: share, refundsOnlyGrow: true)
    }

    func decide(_ answer: StoreAnswer, ledger: LedgerHistory = .init(), policy: ReconciliationPolicy = .init()) -> Decision {
        Reconciler.decide(grant: Self.grant, answer: answer, ledger: ledger, policy: policy)
    }

    @Test("a share is exact where its milli-percent would round first: 1 of 3 units rounded down is 100 of 300, not 99")
    func exactShare() {
        let share = RefundedShare(1, of: 3)
        #expect(share.percentageMilli == 33_333)
        let decision = decide(.verified(Self.facts(.prorated, share: share)), policy: ReconciliationPolicy(rounding: .down))
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
            let decision = decide(.verified(Self.facts(.prorated, share: share)))
            #expect(decision.action == .flaggedForReview && decision.units == 0 && decision.entry?.units == 0)
        }
    }

    @Test("a chargeback and a fraud take every unit back, under their own kind", arguments: [RefundKind.chargeback, .fraud, .full])
    func fullKinds(kind: RefundKind) {
        let decision = decide(.verified(Self.facts(kind)))
        #expect(decision.verdict == .refunded && decision.action == .clawbackCreated && decision.entry?.units == 300)
        #expect(decision.detail?.hasPrefix(kind.storedValue + ": 300 of 300 units") == true)
        // A kind this version does not know is a person's, in every store.
        var apple = Self.grant
        apple.store = .appStore
        let unknown = Reconciler.decide(grant: apple, answer: .verified(Self.facts(.unknown("CHARGEBACK"))), ledger: .init())
        #expect(unknown.action == .flaggedForReview && unknown.entry?.units == 0)
    }

    @Test(
        "a store's review reasons flag a person and move no units, whatever the policy for unknown purchases",
        arguments: ["google_voids_disagree_with_order", "canceled_at_google", "a_new_store_reason"])
    func reviews(reason: String) {
        let kind = ReviewReason(rawValue: reason)
        let decision = decide(.review(kind, detail: "why"), policy: ReconciliationPolicy(clawBackUnknown: true))
        #expect(decision.action == .flaggedForReview && decision.units == 0)
        #expect(decision.entry == LedgerEntryDraft(kind: .review, idempotencyKey: "review:" + reason, units: 0, reason: reason))
        #expect(decision.verdict == .mismatch)
        let again = decide(
            .review(kind, detail: "why"),
            ledger: LedgerHistory([LedgerEntry(entryID: 1, kind: .review, idempotencyKey: "review:" + reason, units: 0)]))
        #expect(again.action == .alreadyRecorded && again.entry == nil)
    }

    @Test(
        "a purchase the store does not know, in a way it does not document as proof, is its store's unknown verdict, for a person",
        arguments: StoreCatalog.descriptions.map(\.store))
    func inconclusiveNotFound(store: Store) {
        var grant = Self.grant
        grant.store = store
        let decision = Reconciler.decide(
            grant: grant, answer: .notFound(conclusive: false, detail: "404"), ledger: .init(), policy: ReconciliationPolicy(clawBackUnknown: true))
        #expect(decision.verdict == Verdict.unknown(to: store))
        #expect(
            decision.entry
                == LedgerEntryDraft(
                    kind: .review, idempotencyKey: "review:" + decision.verdict.rawValue, units: 0,
                    reason: decision.verdict.rawValue))
        #expect(Verdict.unknown(to: .googlePlay) == .unknownToGoogle && Verdict.unknown(to: .appStore) == .unknownToApple)
    }

    /// The ledger after a full refund of the 300 units was taken back.
    static let takenInFull = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1790500000000", units: 300)])

    @Test("a refund that shrinks where the store documents no reduction (Google's full, then 10%) goes to a person, never a give-back")
    func shrinkingRefundIsReviewed() {
        let tenth = Self.facts(.prorated, share: RefundedShare(1, of: 10))
        let decision = decide(.verified(tenth), ledger: Self.takenInFull)
        #expect(decision.verdict == .refunded && decision.action == .flaggedForReview)
        #expect(decision.entry?.kind == .review && decision.entry?.units == 0)
        #expect(decision.entry?.idempotencyKey == "review:refund_smaller_than_taken:1790500000000:30")
        #expect(decision.units == 300, "what stays taken")
        // Rerun: already recorded, still nothing given back.
        let review = LedgerEntry(entryID: 2, kind: .review, idempotencyKey: decision.entry?.idempotencyKey ?? "", units: 0)
        let recorded = LedgerHistory(Self.takenInFull.entries + [review])
        #expect(decide(.verified(tenth), ledger: recorded).action == .alreadyRecorded)
        // A refund that grows is still followed: 10% taken, then the whole.
        let tenthTaken = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1790500000000", units: 30)])
        let grown = decide(.verified(Self.facts(.full)), ledger: tenthTaken)
        #expect(grown.action == .adjustmentCreated && grown.entry?.units == 270)
        // A store that documents a reversal or reduction (the App Store) is followed down, as before.
        var appStore = tenth
        appStore.refundsOnlyGrow = false
        let followed = decide(.verified(appStore), ledger: Self.takenInFull)
        #expect(followed.action == .adjustmentCreated && followed.entry?.units == -270)
    }

    @Test(
        "the studio's choice for a refund that left the purchase with the buyer, and for a partial refund by amount: take back, review or leave",
        arguments: RefundRule.allCases)
    func refundRules(rule: RefundRule) {
        var kept = Self.facts(.full)
        kept.refundRevokedAccess = false
        var byAmount = Self.facts(.prorated, share: RefundedShare(1, of: 3))
        byAmount.refundedByAmount = true
        for (statement, policy, name, units) in [
            (kept, ReconciliationPolicy(refundsKeepingAccess: rule), "refund_keeps_access", Int64(300)),
            (byAmount, ReconciliationPolicy(amountRefunds: rule), "refund_by_amount", Int64(100)),
        ] {
            let decision = decide(.verified(statement), policy: policy)
            #expect(decision.verdict == .refunded)
            switch rule {
            case .takeBack: #expect(decision.action == .clawbackCreated && decision.entry?.units == units)
            case .review:
                #expect(decision.action == .flaggedForReview && decision.entry?.units == 0)
                #expect(decision.entry?.idempotencyKey == "review:\(name):1790500000000")
            case .leave: #expect(decision.action == .none && decision.entry == nil && decision.units == 0)
            }
        }
        // A refund the store says revoked, or does not say, is taken back whatever the choice.
        var revoked = Self.facts(.full)
        revoked.refundRevokedAccess = true
        #expect(decide(.verified(revoked), policy: ReconciliationPolicy(refundsKeepingAccess: rule)).entry?.units == 300)
        #expect(decide(.verified(Self.facts(.full)), policy: ReconciliationPolicy(refundsKeepingAccess: rule)).entry?.units == 300)
    }

    @Test("the defaults: a refund without revoke is left with the player, a partial refund by amount takes its share")
    func refundRuleDefaults() {
        #expect(ReconciliationPolicy().refundsKeepingAccess == .leave && ReconciliationPolicy().amountRefunds == .takeBack)
    }

    @Test("a store that documents no reversal no longer showing its refund while units are taken: a person's, never a give-back")
    func noReversalNoGiveBack() {
        let decision = decide(.verified(Self.facts(nil)), ledger: Self.takenInFull)
        #expect(decision.action == .flaggedForReview && decision.entry?.units == 0 && decision.entry?.kind == .review)
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
