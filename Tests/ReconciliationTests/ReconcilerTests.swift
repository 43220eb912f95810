import Foundation
import Reconciliation
import Testing

@Suite("Verdict rules")
struct ReconcilerTests {
    static let purchased = Date(timeIntervalSince1970: 1_790_000_000)
    static let refundDate = Date(timeIntervalSince1970: 1_790_500_000)
    static let token = UUID()
    static let grant = Grant(
        transactionID: "2000000001", bundleID: "com.studio.game", productID: "gems_600", playerID: "player-1", appAccountToken: token,
        unitsGranted: 600, purchasedAt: purchased)

    static func facts(
        revocationType: String? = nil, percentage: Int32? = nil, date: Date? = nil, product: String = "gems_600",
        quantity: Int32 = 1, environment: StoreEnvironment = .production, bundle: String = "com.studio.game",
        token: String? = token.uuidString
    ) -> StoreStatement {
        StoreStatement(
            transactionID: grant.transactionID, environment: environment, bundleID: bundle, productID: product, quantity: quantity,
            appAccountToken: token,
            revocationDate: date ?? (revocationType == nil ? nil : refundDate), refundKind: revocationType.map(RefundKind.init(storedValue:)),
            refundReason: revocationType == nil ? nil : .issueWithinApp,
            revocationPercentage: percentage)
    }

    func decide(_ answer: StoreAnswer, ledger: LedgerHistory = .init(), policy: ReconciliationPolicy = .init()) -> Decision {
        Reconciler.decide(grant: Self.grant, answer: answer, ledger: ledger, policy: policy)
    }

    @Test("verified, not revoked, nothing open: ok, nothing written")
    func ok() {
        #expect(decide(.verified(Self.facts())) == Decision(verdict: .ok, action: .none))
    }

    @Test("unverified is never ok: retried next run, nothing written")
    func unverified() {
        let decision = decide(.unverified(reason: "HTTP 500 5000001"))
        #expect(decision.verdict == .unverified)
        #expect(decision.action == .retryNextRun)
        #expect(decision.entry == nil)
        #expect(decision.detail == "HTTP 500 5000001")
    }

    /// Apple's 4040010 in both environments, as the App Store's gateway states it.
    static let unknownToApple = StoreAnswer.notFound(conclusive: true, detail: "Apple answered 4040010 in Production and Sandbox")

    @Test("unknown to Apple: flagged for review once; clawed back whole only when configured")
    func unknown() {
        let flagged = decide(Self.unknownToApple)
        #expect(flagged.verdict == .unknownToApple)
        #expect(flagged.action == .flaggedForReview)
        #expect(flagged.entry == LedgerEntryDraft(kind: .review, idempotencyKey: "review:unknown_to_apple", units: 0, reason: "unknown_to_apple"))
        let again = decide(
            Self.unknownToApple,
            ledger: LedgerHistory([LedgerEntry(entryID: 9, kind: .review, idempotencyKey: "review:unknown_to_apple", units: 0)]))
        #expect(again.action == .alreadyRecorded)
        #expect(again.entry == nil)
        let clawed = decide(Self.unknownToApple, policy: .init(clawBackUnknown: true))
        #expect(clawed.action == .clawbackCreated)
        #expect(clawed.entry?.units == 600)
    }

    @Test("a full refund claws back the whole grant once; a revocation date without a type too")
    func fullRefund() {
        let decision = decide(.verified(Self.facts(revocationType: "REFUND_FULL", percentage: 100_000)))
        #expect(decision.verdict == .refunded)
        #expect(decision.action == .clawbackCreated)
        #expect(decision.entry == LedgerEntryDraft(kind: .clawback, idempotencyKey: "clawback:1790500000000", units: 600))
        let untyped = decide(
            .verified(
                StoreStatement(
                    transactionID: Self.grant.transactionID, environment: .production, bundleID: "com.studio.game", productID: "gems_600",
                    quantity: 1,
                    appAccountToken: Self.token.uuidString, revocationDate: Self.refundDate)))
        #expect(untyped.verdict == .refunded)
        #expect(untyped.entry?.units == 600)
    }

    @Test("a Family Sharing revocation is 'revoked' and claws back the whole grant")
    func familyRevoke() {
        let decision = decide(.verified(Self.facts(revocationType: "FAMILY_REVOKE")))
        #expect(decision.verdict == .revoked)
        #expect(decision.entry?.units == 600)
    }

    @Test(
        "prorated refunds take back units × percentage / 100000 with the rounding rule",
        arguments: [
            (600, 50_000, RoundingRule.nearestHalfUp, 300), (600, 33_333, .nearestHalfUp, 200), (600, 33_417, .nearestHalfUp, 201),
            (3, 50_000, .nearestHalfUp, 2), (3, 50_000, .down, 1), (3, 50_000, .up, 2), (3, 50_000, .nearestHalfEven, 2),
            (5, 50_000, .nearestHalfEven, 2), (7, 50_000, .nearestHalfEven, 4), (600, 1, .up, 1), (600, 1, .nearestHalfUp, 0),
            (600, 100_000, .down, 600), (600, 0, .up, 0), (600, 120_000, .nearestHalfUp, 600), (600, -5, .up, 0),
        ] as [(Int64, Int32, RoundingRule, Int64)])
    func prorated(units: Int64, percentage: Int32, rule: RoundingRule, expected: Int64) {
        #expect(ProratedUnits.compute(units: units, percentageMilli: percentage, rule: rule) == expected)
    }

    @Test("a prorated refund writes a clawback of the prorated units; a 0% one is still recorded")
    func proratedDecision() {
        let decision = decide(.verified(Self.facts(revocationType: "REFUND_PRORATED", percentage: 33_333)))
        #expect(decision.entry?.units == 200)
        #expect(decision.detail?.contains("REFUND_PRORATED 33.333%: 200 of 600 units") == true)
        let nothing = decide(.verified(Self.facts(revocationType: "REFUND_PRORATED", percentage: 10)))
        #expect(nothing.action == .clawbackCreated)
        #expect(nothing.entry?.units == 0)
    }

    @Test("a refund already in the ledger is reported as already recorded")
    func rerun() {
        let ledger = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1790500000000", units: 600)])
        let decision = decide(.verified(Self.facts(revocationType: "REFUND_FULL")), ledger: ledger)
        #expect(decision.action == .alreadyRecorded)
        #expect(decision.entry == nil)
        #expect(decision.units == 600)
    }

    @Test("a prorated refund that becomes full writes one adjustment for the difference")
    func proratedBecomesFull() {
        let ledger = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1790500000000", units: 300)])
        let decision = decide(.verified(Self.facts(revocationType: "REFUND_FULL")), ledger: ledger)
        #expect(decision.action == .adjustmentCreated)
        #expect(decision.entry == LedgerEntryDraft(kind: .adjustment, idempotencyKey: "adjustment:1790500000000:600:at-1", units: 300))
        let after = LedgerHistory(
            ledger.entries + [LedgerEntry(entryID: 2, kind: .adjustment, idempotencyKey: "adjustment:1790500000000:600", units: 300)])
        #expect(decide(.verified(Self.facts(revocationType: "REFUND_FULL")), ledger: after).action == .alreadyRecorded)
    }

    @Test("Apple no longer showing a refund reverses the open clawback; then a new refund claws back again")
    func reversalThenNewRefund() {
        let clawed = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1790500000000", units: 600)])
        let reversal = decide(.verified(Self.facts()), ledger: clawed)
        #expect(reversal.verdict == .refundReversed)
        #expect(reversal.entry == LedgerEntryDraft(kind: .reversal, idempotencyKey: "reversal:1", units: -600, reversesEntryID: 1))
        let closed = LedgerHistory(
            clawed.entries + [LedgerEntry(entryID: 2, kind: .reversal, idempotencyKey: "reversal:1", units: -600, reversesEntryID: 1)])
        #expect(decide(.verified(Self.facts()), ledger: closed) == Decision(verdict: .ok, action: .none))
        let second = Date(timeIntervalSince1970: 1_791_000_000)
        let refundAgain = decide(.verified(Self.facts(revocationType: "REFUND_FULL", date: second)), ledger: closed)
        #expect(refundAgain.action == .clawbackCreated)
        #expect(refundAgain.entry?.idempotencyKey == "clawback:1791000000000")
    }

    @Test("a reversal after an adjustment closes the latest take-back and gives back everything outstanding")
    func reversalAfterAdjustment() {
        let ledger = LedgerHistory([
            LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1", units: 300),
            LedgerEntry(entryID: 2, kind: .reversal, idempotencyKey: "reversal:1", units: -300, reversesEntryID: 1),
            LedgerEntry(entryID: 3, kind: .adjustment, idempotencyKey: "adjustment:1:600", units: 600),
        ])
        let decision = decide(.verified(Self.facts()), ledger: ledger)
        #expect(decision.entry == LedgerEntryDraft(kind: .reversal, idempotencyKey: "reversal:3", units: -600, reversesEntryID: 3))
    }

    @Test("Apple disagreeing on product, quantity, environment, bundle or token is a mismatch, flagged once")
    func mismatch() {
        let decision = decide(.verified(Self.facts(product: "gems_6500", quantity: 2)))
        #expect(decision.verdict == .mismatch)
        #expect(decision.action == .flaggedForReview)
        #expect(decision.entry?.idempotencyKey == "review:mismatch:product_id, quantity")
        #expect(decision.detail == "Apple disagrees with the grant on product_id, quantity")
        #expect(
            Reconciler.mismatchedFields(Self.grant, Self.facts(environment: .sandbox, bundle: "com.other", token: nil))
                == ["bundle_id", "environment", "app_account_token"])
        // A grant without a token does not disagree with Apple's token.
        var tokenless = Self.grant
        tokenless.appAccountToken = nil
        #expect(Reconciler.mismatchedFields(tokenless, Self.facts()).isEmpty)
    }

    @Test("a refunded transaction that also disagrees is clawed back, with the disagreement in the detail")
    func refundedAndMismatched() {
        let decision = decide(.verified(Self.facts(revocationType: "REFUND_FULL", product: "other")))
        #expect(decision.verdict == .refunded)
        #expect(decision.detail?.contains("also disagrees with Apple on product_id") == true)
    }

    /// A registered store that declares no verdict of its own for a purchase it does not know.
    static let shopWithoutVerdict: Store = {
        let store = Store(identifier: "reconciler_test_shop")
        StoreCatalog.register(
            StoreDescription(store: store, company: "A Shop", displayName: "A Shop", strategies: [], report: .init(requestsKey: "a_shop")))
        return store
    }()

    @Test("every verdict and action is reachable by some input")
    func exhaustive() {
        let ledgerWithClawback = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1790500000000", units: 600)])
        let decisions = [
            decide(.verified(Self.facts())), decide(.unverified(reason: "x")), decide(Self.unknownToApple),
            decide(.verified(Self.facts(product: "x"))), decide(.verified(Self.facts(revocationType: "REFUND_FULL"))),
            decide(.verified(Self.facts(revocationType: "FAMILY_REVOKE"))), decide(.verified(Self.facts()), ledger: ledgerWithClawback),
            decide(.verified(Self.facts(revocationType: "REFUND_FULL")), ledger: ledgerWithClawback),
            decide(.verified(Self.facts(revocationType: "REFUND_PRORATED", percentage: 50_000)), ledger: ledgerWithClawback),
            decide(.noRefundReported(source: "feed")), decide(.review(ReviewReason(rawValue: "a_store_reason"), detail: "why")),
            Reconciler.decide(grant: Self.grant.in(.googlePlay), answer: .notFound(conclusive: false, detail: "404"), ledger: .init()),
            Reconciler.decide(grant: Self.grant.in(Self.shopWithoutVerdict), answer: .notFound(conclusive: false, detail: "404"), ledger: .init()),
        ]
        #expect(Set(decisions.map(\.verdict)) == Set(Verdict.allCases))
        #expect(Set(decisions.map(\.action)) == Set(CheckAction.allCases))
    }
}

@Suite("Reconciliation window")
struct WindowTests {
    static func date(_ text: String) throws -> Date { try ReconciliationWindow.date(text) }

    @Test("by default the three calendar months before the current one, in UTC")
    func defaultWindow() throws {
        let window = ReconciliationWindow.monthsBefore(try Self.date("2026-12-01T00:30:00Z"))
        #expect(window.start == (try Self.date("2026-09-01")))
        #expect(window.end == (try Self.date("2026-12-01")))
        #expect(window.label == "2026-09-01..2026-12-01")
        let january = ReconciliationWindow.monthsBefore(try Self.date("2027-01-15T12:00:00Z"))
        #expect(january.start == (try Self.date("2026-10-01")))
    }

    @Test("--month is one calendar month, labelled YYYY-MM; malformed months are refused")
    func month() throws {
        let window = try ReconciliationWindow.month("2026-02")
        #expect(window.start == (try Self.date("2026-02-01")))
        #expect(window.end == (try Self.date("2026-03-01")))
        #expect(window.label == "2026-02")
        for bad in ["2026-13", "26-02", "2026/02", "2026-2", "x"] { #expect(throws: WindowError.self) { try ReconciliationWindow.month(bad) } }
        #expect(throws: WindowError.self) { try ReconciliationWindow(start: try Self.date("2026-03-01"), end: try Self.date("2026-02-01")) }
    }
}

@Suite("Refund feed answers")
struct FeedRuleTests {
    @Test("absent from a covering refund feed: no refund reported (never ok), and never closes an open clawback")
    func notInFeed() {
        let plain = Reconciler.decide(
            grant: ReconcilerTests.grant, answer: .noRefundReported(source: "no REFUND notification since 2026-08-29"),
            ledger: LedgerHistory())
        #expect(plain == Decision(verdict: .noRefundReported, action: .none, detail: "no REFUND notification since 2026-08-29"))
        let open = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1", units: 600)])
        let guarded = Reconciler.decide(grant: ReconcilerTests.grant, answer: .noRefundReported(source: "feed"), ledger: open)
        #expect(guarded.verdict == .unverified)
        #expect(guarded.entry == nil)
        #expect(guarded.units == 600)
    }
}

@Suite("Verdict rules fail closed")
struct FailClosedRuleTests {
    static let grant = ReconcilerTests.grant

    func decide(_ facts: StoreStatement, ledger: LedgerHistory = .init()) -> Decision {
        Reconciler.decide(grant: Self.grant, answer: .verified(facts), ledger: ledger)
    }

    @Test("facts about another transaction decide nothing; facts with no fields are not 'ok' for a grant with a token")
    func otherTransaction() {
        let other = decide(ReconcilerTests.facts(revocationType: "REFUND_FULL").with { $0.transactionID = "2000000002" })
        #expect(other.verdict == .unverified)
        #expect(other.entry == nil)
        #expect(other.detail == "Apple's answer is about transaction 2000000002, not 2000000001")
        // What refund-history used to answer for a grant its history did not list.
        let empty = decide(StoreStatement(transactionID: Self.grant.transactionID))
        #expect(empty.verdict == .mismatch)
        // A source that carries no token (a legacy receipt) says nothing about it.
        let receipt = decide(
            StoreStatement(
                transactionID: Self.grant.transactionID, environment: .production, productID: "gems_600", quantity: 1,
                reportsAppAccountToken: false))
        #expect(receipt.verdict == .ok)
    }

    @Test(
        "a revocation Apple did not spell out goes to a person, never a full clawback",
        arguments: [
            ("REFUND_PRORATED", nil, 1, "review:revocation:1790500000000:prorated-without-percentage"),
            ("REFUND_PRORATED", 120_000, 1, "review:revocation:1790500000000:percentage-out-of-range"),
            ("REFUND_PRORATED", -5, 1, "review:revocation:1790500000000:percentage-out-of-range"),
            ("REFUND_PARTIAL_NEW", nil, 1, "review:revocation:1790500000000:type:REFUND_PARTIAL_NEW"),
            ("REFUND_FULL", nil, 7, "review:revocation:1790500000000:reason:7"),
        ] as [(String, Int32?, Int32, String)])
    func unsupported(type: String, percentage: Int32?, reason: Int32, key: String) {
        var facts = ReconcilerTests.facts(revocationType: type, percentage: percentage)
        facts.refundReason = RevocationReason(rawValue: reason)
        let decision = decide(facts)
        #expect(decision.verdict == .refunded)
        #expect(decision.action == .flaggedForReview)
        #expect(decision.entry?.kind == .review)
        #expect(decision.entry?.units == 0)
        #expect(decision.entry?.idempotencyKey == key)
        // Rerun: already recorded, still nothing taken.
        let again = decide(facts, ledger: LedgerHistory([LedgerEntry(entryID: 3, kind: .review, idempotencyKey: key, units: 0)]))
        #expect(again.action == .alreadyRecorded)
        #expect(again.units == 0)
    }

    @Test("a revocation date that moves with the same units writes nothing")
    func movedDate() {
        let taken = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1790400000000", units: 600)])
        let decision = decide(ReconcilerTests.facts(revocationType: "REFUND_FULL"), ledger: taken)
        #expect(decision.action == .alreadyRecorded)
        #expect(decision.entry == nil)
        #expect(decision.units == 600)
    }

    @Test("a refund that returns at the same date after each reversal is taken back each time")
    func refundReturnsAfterReversals() {
        let full = ReconcilerTests.facts(revocationType: "REFUND_FULL")
        var ledger = LedgerHistory()
        var nextID: Int64 = 1
        func apply(_ decision: Decision) {
            guard let entry = decision.entry else { return }
            ledger.entries.append(
                LedgerEntry(
                    entryID: nextID, kind: entry.kind, idempotencyKey: entry.idempotencyKey, units: entry.units,
                    reversesEntryID: entry.reversesEntryID))
            nextID += 1
        }
        for round in 1...3 {
            let refund = decide(full, ledger: ledger)
            #expect(refund.entry?.units == 600, "round \(round)")
            #expect(!ledger.contains(key: refund.entry?.idempotencyKey ?? ""), "round \(round)")
            apply(refund)
            #expect(ledger.outstandingUnits == 600)
            let reversal = decide(ReconcilerTests.facts(), ledger: ledger)
            #expect(reversal.verdict == .refundReversed)
            apply(reversal)
            #expect(ledger.outstandingUnits == 0)
        }
        #expect(Set(ledger.entries.map(\.idempotencyKey)).count == 6)
    }
}

extension FailClosedRuleTests {
    @Test("a refund that flips between prorated and full is followed each time, never stuck on an earlier key")
    func flippingTarget() throws {
        var ledger = LedgerHistory()
        var nextID: Int64 = 1
        for (round, percentage) in ([50_000, 100_000, 50_000, 100_000, 50_000] as [Int32]).enumerated() {
            let type = percentage == 100_000 ? "REFUND_FULL" : "REFUND_PRORATED"
            let decision = decide(ReconcilerTests.facts(revocationType: type, percentage: percentage), ledger: ledger)
            let entry = try #require(decision.entry, "round \(round)")
            #expect(!ledger.contains(key: entry.idempotencyKey), "round \(round)")
            ledger.entries.append(LedgerEntry(entryID: nextID, kind: entry.kind, idempotencyKey: entry.idempotencyKey, units: entry.units))
            nextID += 1
            #expect(ledger.outstandingUnits == (percentage == 100_000 ? 600 : 300), "round \(round)")
            // The same decision on the same ledger (a rerun) writes nothing.
            #expect(decide(ReconcilerTests.facts(revocationType: type, percentage: percentage), ledger: ledger).entry == nil)
        }
    }

    @Test("a refund of a purchase Apple has in another environment moves no units: a mismatch for a person")
    func otherEnvironmentRefund() {
        let refunded = decide(ReconcilerTests.facts(revocationType: "REFUND_FULL", environment: .sandbox))
        #expect(refunded.verdict == .mismatch)
        #expect(refunded.entry?.kind == .review)
        #expect(refunded.entry?.units == 0)
        let open = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1", units: 600)])
        let notRevoked = decide(ReconcilerTests.facts(environment: .sandbox), ledger: open)
        #expect(notRevoked.verdict == .mismatch)
        #expect(notRevoked.entry?.kind == .review)
    }

    @Test("an id that cannot be Apple's is reviewed, never clawed back, whatever claw_back_unknown_to_apple says")
    func invalidIDNeverClawedBack() {
        let decision = Reconciler.decide(
            grant: Self.grant, answer: .notFound(conclusive: false, detail: "not digits"), ledger: .init(),
            policy: .init(clawBackUnknown: true))
        #expect(decision.verdict == .unknownToApple)
        #expect(decision.entry?.kind == .review)
        #expect(decision.entry?.units == 0)
    }
}

extension Grant {
    /// The same grant, made in `store`.
    func `in`(_ store: Store) -> Grant {
        var copy = self
        copy.store = store
        return copy
    }
}

extension StoreStatement {
    func with(_ change: (inout StoreStatement) -> Void) -> StoreStatement {
        var copy = self
        change(&copy)
        return copy
    }
}
