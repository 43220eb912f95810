import Foundation

/// What the job does (or, in a dry run, would do) about a verdict.
public enum CheckAction: String, Sendable, Equatable, CaseIterable, Codable, CodingKeyRepresentable {
    case none
    case clawbackCreated = "clawback_created"
    case adjustmentCreated = "adjustment_created"
    /// The entry this decision calls for is already in the ledger (a rerun).
    case alreadyRecorded = "already_recorded"
    case reversalCreated = "reversal_created"
    case flaggedForReview = "flagged_for_review"
    case retryNextRun = "retry_next_run"
}

/// The decision for one grant: the verdict, the action, the ledger entry to write (if any) and why.
public struct Decision: Sendable, Equatable {
    public var verdict: Verdict
    public var action: CheckAction
    public var entry: LedgerEntryDraft?
    /// Units taken back from the player once this decision is applied (negative: given back).
    public var units: Int64
    /// Mismatched fields, the reason a grant is unverified, and the like.
    public var detail: String?

    public init(verdict: Verdict, action: CheckAction, entry: LedgerEntryDraft? = nil, units: Int64 = 0, detail: String? = nil) {
        self.verdict = verdict
        self.action = action
        self.entry = entry
        self.units = units
        self.detail = detail
    }

    /// The decision once its entry turned out to exist already (ON CONFLICT DO NOTHING wrote nothing).
    public func alreadyRecorded() -> Decision {
        var copy = self
        copy.action = .alreadyRecorded
        return copy
    }
}

/// Studio choices the rules depend on.
public struct ReconciliationPolicy: Sendable, Equatable {
    public var rounding: RoundingRule
    /// Claw back a purchase its store conclusively does not know (`StoreAnswer.notFound(conclusive: true)`)
    /// instead of only flagging it for review (`run.claw_back_unknown_to_apple`).
    public var clawBackUnknown: Bool
    /// A refund the store states left the purchase with the buyer (`StoreStatement.refundRevokedAccess`
    /// false: Google's refund without revoke, a support agent's goodwill): left with the player by default.
    public var refundsKeepingAccess: RefundRule
    /// A partial refund stated as an amount of money (`StoreStatement.refundedByAmount`): the amount's share
    /// of the units taken back by default.
    public var amountRefunds: RefundRule

    public init(
        rounding: RoundingRule = .nearestHalfUp, clawBackUnknown: Bool = false, refundsKeepingAccess: RefundRule = .leave,
        amountRefunds: RefundRule = .takeBack
    ) {
        self.rounding = rounding
        self.clawBackUnknown = clawBackUnknown
        self.refundsKeepingAccess = refundsKeepingAccess
        self.amountRefunds = amountRefunds
    }
}

/// What a refund the studio has a choice about means for units.
public enum RefundRule: String, Sendable, Equatable, CaseIterable {
    /// Take back what the store's statement says (every unit, or the stated share).
    case takeBack = "take_back"
    /// A review entry: a person decides, nothing moves.
    case review
    /// Nothing: the player keeps the units (the refund stays in finance's reports).
    case leave
}

/// The verdict rules: a pure function of the grant, its store's answer, the ledger so far and the policy.
/// They speak of a store's statement, never of one store: each store's gateway says what its store stated.
public enum Reconciler {
    /// `2026-08-01`. FoundationEssentials' format style, built once: ISO8601DateFormatter builds an ICU
    /// formatter per call, which took two thirds of a notifications-strategy run's CPU.
    static let utcDay = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day()

    public static func decide(grant: Grant, answer: StoreAnswer, ledger: LedgerHistory, policy: ReconciliationPolicy = .init())
        -> Decision
    {
        let store = grant.store.company
        switch answer {
        case .unverified(let reason):
            return Decision(verdict: .unverified, action: .retryNextRun, units: ledger.outstandingUnits, detail: reason)

        case .noRefundReported(let source):
            if ledger.outstandingUnits != 0 {
                // Only the store's current statement about the purchase can say whether an open clawback was reversed.
                return Decision(
                    verdict: .unverified, action: .retryNextRun, units: ledger.outstandingUnits,
                    detail: "a clawback is open and \(source) cannot tell whether \(store) reversed it")
            }
            return Decision(verdict: .noRefundReported, action: .none, detail: source)

        case .notFound(let conclusive, let detail):
            let verdict = Verdict.unknown(to: grant.store)
            // Only an answer the store documents as proof may take units, and only when the studio chose so;
            // anything else (an id judged without asking, an answer not documented as proof) is a person's.
            if conclusive && policy.clawBackUnknown {
                return clawBack(target: grant.unitsGranted, eventKey: "unknown", ledger: ledger, verdict: verdict, detail: detail)
            }
            return review(key: "review:" + verdict.rawValue, reason: verdict.rawValue, ledger: ledger, verdict: verdict, detail: detail)

        case .review(let reason, let detail):
            // The store's own statement, for a person: never units moved, whatever the policy says.
            return review(key: "review:" + reason.rawValue, reason: reason.rawValue, ledger: ledger, verdict: .mismatch, detail: detail)

        case .verified(let facts):
            guard facts.transactionID == grant.transactionID else {
                return Decision(
                    verdict: .unverified, action: .retryNextRun, units: ledger.outstandingUnits,
                    detail: "\(store)'s answer is about transaction \(facts.transactionID), not \(grant.transactionID)")
            }
            let mismatches = mismatchedFields(grant, facts)
            // A purchase the store has in another environment (a sandbox purchase granted as a production
            // one): its refund or its reversal moved no money of the grant's environment, so no units move; a
            // person decides.
            if mismatches.contains("environment") { return mismatch(mismatches, store: store, ledger: ledger) }
            if facts.isRevoked { return revocation(grant, facts, ledger: ledger, policy: policy, mismatches: mismatches) }
            if ledger.outstandingUnits != 0 && facts.refundsOnlyGrow {
                // A store that documents no reversal of a refund no longer shows it: an inconsistent view, for a
                // person, never units given back by themselves (each store's reading says so first; this holds
                // whatever a reading forgets).
                return review(
                    key: "review:refund_no_longer_shown", reason: "refund_no_longer_shown", ledger: ledger, verdict: .mismatch,
                    detail: "\(store) no longer shows the refund while \(ledger.outstandingUnits) units are taken back and documents no reversal")
            }
            if ledger.outstandingUnits != 0 {
                // The store no longer shows a revocation: give back what is still taken, closing the latest take-back.
                let detail = "\(store) no longer shows the refund: \(ledger.outstandingUnits) units given back"
                guard let open = ledger.lastOpenTakeBack else {
                    // Nothing left to name (only net-negative history): settle the balance as an adjustment.
                    let entry = LedgerEntryDraft(
                        kind: .adjustment, idempotencyKey: "adjustment:settle:\(ledger.entries.count)", units: -ledger.outstandingUnits)
                    return Decision(verdict: .refundReversed, action: .adjustmentCreated, entry: entry, units: 0, detail: detail)
                }
                let entry = LedgerEntryDraft(
                    kind: .reversal, idempotencyKey: "reversal:\(open.entryID)", units: -ledger.outstandingUnits,
                    reversesEntryID: open.entryID)
                return Decision(verdict: .refundReversed, action: .reversalCreated, entry: entry, units: 0, detail: detail)
            }
            if !mismatches.isEmpty { return mismatch(mismatches, store: store, ledger: ledger) }
            return Decision(verdict: .ok, action: .none, units: ledger.outstandingUnits)
        }
    }

    static func mismatch(_ fields: [String], store: String, ledger: LedgerHistory) -> Decision {
        let fields = fields.joined(separator: ", ")
        return review(
            key: "review:mismatch:\(fields)", reason: "mismatch: \(fields)", ledger: ledger, verdict: .mismatch,
            detail: "\(store) disagrees with the grant on \(fields)")
    }

    /// The store shows the purchase refunded or revoked. Units move only when the store said exactly how
    /// many: a prorated refund without a usable share, or a kind or reason this version does not know, goes
    /// to a person instead of becoming a full clawback.
    static func revocation(_ grant: Grant, _ facts: StoreStatement, ledger: LedgerHistory, policy: ReconciliationPolicy, mismatches: [String])
        -> Decision
    {
        let verdict: Verdict = facts.refundKind == .familyRevoke ? .revoked : .refunded
        let event = facts.revocationDate.map { String(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? "undated"
        if let (problem, text) = unsupportedRevocation(facts) {
            return review(
                key: "review:revocation:\(event):\(problem)", reason: "revocation: \(problem)", ledger: ledger, verdict: verdict,
                detail: text + "; a person decides, nothing is taken back automatically")
        }
        var target = grant.unitsGranted
        if facts.refundKind == .prorated {
            if let share = facts.refundedShare {
                target = ProratedUnits.compute(units: grant.unitsGranted, share: share, rule: policy.rounding)
            } else if let percentage = facts.revocationPercentage {
                target = ProratedUnits.compute(units: grant.unitsGranted, percentageMilli: percentage, rule: policy.rounding)
            }
        }
        var detail = describeRevocation(facts, units: target, of: grant.unitsGranted)
        if !mismatches.isEmpty { detail += "; also disagrees with \(grant.store.company) on " + mismatches.joined(separator: ", ") }
        // The studio's choice for refunds it may want to honour: one made without revoking the purchase, and
        // a partial one stated in money (a goodwill gesture as often as a returned item).
        for (applies, rule, name, what) in [
            (facts.refundRevokedAccess == false, policy.refundsKeepingAccess, "refund_keeps_access", "refunded without revoking the purchase"),
            (facts.refundKind == .prorated && facts.refundedByAmount, policy.amountRefunds, "refund_by_amount", "refunded by an amount of money"),
        ] where applies {
            switch rule {
            case .takeBack: continue
            case .review:
                return review(
                    key: "review:\(name):\(event)", reason: name, ledger: ledger, verdict: verdict,
                    detail: detail + "; \(what): a person decides, nothing is taken back automatically")
            case .leave:
                return Decision(
                    verdict: verdict, action: .none, units: ledger.outstandingUnits,
                    detail: detail + "; \(what): left with the player, as the studio chose")
            }
        }
        if facts.refundsOnlyGrow && target < ledger.outstandingUnits {
            // A store that documents no reduction of a refund now states less than is taken: an inconsistent
            // view (a stale replica, a changed order), never units given back by themselves.
            return review(
                key: "review:refund_smaller_than_taken:\(event):\(target)", reason: "refund_smaller_than_taken", ledger: ledger,
                verdict: verdict,
                detail: detail + "; \(ledger.outstandingUnits) units are already taken back and \(grant.store.company) documents no "
                    + "reduction of a refund: a person decides, nothing is given back automatically")
        }
        return clawBack(target: target, eventKey: event, ledger: ledger, verdict: verdict, detail: detail)
    }

    /// Why a revocation cannot be turned into units (a short key for the review entry, and the text), or nil.
    static func unsupportedRevocation(_ facts: StoreStatement) -> (String, String)? {
        switch facts.refundKind {
        case nil, .full, .familyRevoke, .chargeback, .fraud:
            break
        case .prorated where facts.refundedShare != nil:
            guard facts.refundedShare?.isPartial == true else {
                return ("share-out-of-range", "a partial refund whose share is not strictly between nothing and the whole")
            }
        case .prorated:
            guard let percentage = facts.revocationPercentage else {
                return ("prorated-without-percentage", "REFUND_PRORATED without a revocationPercentage: how much was refunded is unknown")
            }
            guard (0...100_000).contains(percentage) else {
                return ("percentage-out-of-range", "revocationPercentage \(percentage) is outside 0...100000")
            }
        case .unknown(let other):
            let shown = String(other.unicodeScalars.prefix(64))
            return ("type:" + shown, "revocationType \(shown) is not one this version knows")
        }
        if case .unknown(let code) = facts.refundReason {
            return ("reason:\(code)", "revocationReason \(code) is not one this version knows")
        }
        return nil
    }

    /// Brings the units taken back to `target` for the refund event `eventKey` (the store's revocation date):
    /// a clawback when nothing is taken yet, an adjustment for a difference, nothing when it is already so.
    static func clawBack(target: Int64, eventKey: String, ledger: LedgerHistory, verdict: Verdict, detail: String) -> Decision {
        let outstanding = ledger.outstandingUnits
        let clawbackKey = "clawback:\(eventKey)"
        // Already so: nothing moves, whatever date the store now shows for the refund.
        if outstanding == target && (target != 0 || ledger.contains(key: clawbackKey)) {
            return Decision(verdict: verdict, action: .alreadyRecorded, units: outstanding, detail: detail)
        }
        if outstanding == 0 && !ledger.contains(key: clawbackKey) {
            let entry = LedgerEntryDraft(kind: .clawback, idempotencyKey: clawbackKey, units: target)
            return Decision(verdict: verdict, action: .clawbackCreated, entry: entry, units: target, detail: detail)
        }
        // The refund changed (prorated became full, a new percentage) or came back after a reversal: take or
        // give the difference. The key names the ledger's length too, so the same decision on the same ledger
        // (a rerun, an overlapping shard) collides, while a target that returns later (50%, full, 50%, full
        // again; or a refund back after a reversal) is written again instead of mistaken for the earlier one.
        let key = "adjustment:\(eventKey):\(target):at-\(ledger.entries.count)"
        let entry = LedgerEntryDraft(kind: .adjustment, idempotencyKey: key, units: target - outstanding)
        return Decision(
            verdict: verdict, action: .adjustmentCreated, entry: entry, units: target,
            detail: detail + "; adjusted from \(outstanding) units")
    }

    static func review(key: String, reason: String, ledger: LedgerHistory, verdict: Verdict, detail: String) -> Decision {
        if ledger.contains(key: key) {
            return Decision(verdict: verdict, action: .alreadyRecorded, units: ledger.outstandingUnits, detail: detail)
        }
        return Decision(
            verdict: verdict, action: .flaggedForReview, entry: LedgerEntryDraft(kind: .review, idempotencyKey: key, units: 0, reason: reason),
            units: ledger.outstandingUnits, detail: detail)
    }

    /// Fields on which the store's statement disagrees with the grant, in the grant table's names.
    public static func mismatchedFields(_ grant: Grant, _ facts: StoreStatement) -> [String] {
        var fields: [String] = []
        if let bundle = facts.bundleID, bundle != grant.bundleID { fields.append("bundle_id") }
        if let product = facts.productID, product != grant.productID { fields.append("product_id") }
        if let environment = facts.environment, environment != grant.environment { fields.append("environment") }
        if let quantity = facts.quantity, quantity != grant.quantity { fields.append("quantity") }
        if let token = grant.appAccountToken, facts.reportsAppAccountToken,
            facts.appAccountToken.flatMap(UUID.init(uuidString:)) != token
        {
            fields.append("app_account_token")
        }
        return fields
    }

    static func describeRevocation(_ facts: StoreStatement, units: Int64, of granted: Int64) -> String {
        var text = facts.refundKind?.storedValue ?? "revocation without a type"
        if facts.refundKind == .prorated, let share = facts.refundedShare {
            text += " \(share.numerator)/\(share.denominator)"
        } else if facts.refundKind == .prorated, let percentage = facts.revocationPercentage {
            text += " \(percentage / 1000).\(String(format: "%03d", percentage % 1000))%"
        }
        return text + ": \(units) of \(granted) units"
    }
}
