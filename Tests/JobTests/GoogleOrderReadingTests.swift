import AppStoreSimulator
import Foundation
import GooglePlay
import Reconciliation
import Storage
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// Google's order and the sweep's voids read together, fail closed: where the two disagree the grant stays
/// unverified; the voids add a reason or a quantity, never a verdict the order does not state.
@Suite("Google Play: an order and its voids read together")
struct GoogleOrderReadingTests {
    static let bought = Date(timeIntervalSince1970: 1_790_000_000)

    static func record(_ state: String, quantity: Int = 3) -> GoogleOrderRecord {
        var order = GoogleOrderRecord(
            orderId: "GPA.1", packageName: "com.studio.game", purchaseToken: "token-1", productId: "gems_100", quantity: quantity,
            priceMilli: 990 * Int64(quantity), currency: "EUR", purchaseTime: bought, state: state)
        if state == "REFUNDED" { order.refund = .init(date: bought + 3_600, reason: "OTHER", amountMilli: 990 * Int64(quantity)) }
        if state == "PARTIALLY_REFUNDED" { order.partialRefunds = [.init(date: bought + 3_600, amountMilli: 990, processed: true)] }
        return order
    }

    static let grant = Grant(
        transactionID: "token-1", bundleID: "com.studio.game", productID: "gems_100", playerID: "p", quantity: 3, unitsGranted: 300,
        purchasedAt: bought, store: .googlePlay, orderID: "GPA.1")

    static func void(reason: Int32 = 0, quantity: Int32? = nil, order: String? = "GPA.1") -> StoredVoid {
        StoredVoid(
            purchaseToken: "token-1", orderID: order, purchasedAt: bought, voidedAt: bought + 3_600, source: 0, reason: reason, quantity: quantity)
    }

    func read(_ state: String, voids: [StoredVoid] = [], ledger: LedgerHistory = .init(), grant: Grant = grant) -> StoreAnswer {
        GoogleOrderReading.answer(for: grant, order: .order(Self.record(state).order), voids: voids, ledger: ledger)
    }

    func isUnverified(_ answer: StoreAnswer) -> Bool {
        if case .unverified = answer { return true }
        return false
    }

    func review(_ answer: StoreAnswer) -> ReviewReason? {
        if case .review(let kind, _) = answer { return kind }
        return nil
    }

    @Test("voids that disagree with the order, and a grant without an order id, go to a person: no units, no retry forever")
    func disagreements() {
        #expect(review(read("PROCESSED", voids: [Self.void()])) == .voidsDisagree)
        #expect(review(read("PARTIALLY_REFUNDED", voids: [Self.void()])) == .voidsDisagree)
        // 3 items voided of 3, or 2 while the order's amount says 1: a void kept twice or one missed.
        #expect(review(read("PARTIALLY_REFUNDED", voids: [Self.void(quantity: 2), Self.void(quantity: 1)])) == .voidsDisagree)
        #expect(review(read("PARTIALLY_REFUNDED", voids: [Self.void(quantity: 2)])) == .voidsDisagree)
        #expect(review(read("REFUNDED", voids: [Self.void(order: "GPA.2")])) == .voidsDisagree)
        var otherProduct = Self.grant
        otherProduct.productID = "gems_600"
        #expect(review(read("REFUNDED", grant: otherProduct)) == .orderDisagrees)
        var withoutOrder = Self.grant
        withoutOrder.orderID = nil
        #expect(review(read("REFUNDED", grant: withoutOrder)) == .withoutOrderID)
        // An open clawback whose order shows PROCESSED again is that review, whatever the voids say.
        let open = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1", units: 300)])
        #expect(review(read("PROCESSED", voids: [Self.void()], ledger: open)) == .refundNoLongerShown)
    }

    @Test("two partial refunds, by quantity, add up; then the full refund adjusts to every unit")
    func partialsThenFull() {
        var order = Self.record("PARTIALLY_REFUNDED", quantity: 5)
        order.partialRefunds = [
            .init(date: Self.bought + 3_600, amountMilli: 990, processed: true),
            .init(date: Self.bought + 7_200, amountMilli: 1_980, processed: true),
        ]
        var grant = Self.grant
        grant.quantity = 5
        grant.unitsGranted = 500
        let voids = [Self.void(quantity: 1), Self.void(quantity: 2)]
        let partial = GoogleOrderReading.answer(for: grant, order: .order(order.order), voids: voids, ledger: .init())
        let first = Reconciler.decide(grant: grant, answer: partial, ledger: .init())
        #expect(first.action == .clawbackCreated && first.entry?.units == 300)
        // Google refunds the rest: the order is REFUNDED, its voids one more without a quantity.
        order.state = "REFUNDED"
        order.refund = .init(date: Self.bought + 10_800, reason: "OTHER", amountMilli: 4_950)
        let full = GoogleOrderReading.answer(for: grant, order: .order(order.order), voids: voids + [Self.void()], ledger: .init())
        let ledger = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: first.entry?.idempotencyKey ?? "", units: 300)])
        let second = Reconciler.decide(grant: grant, answer: full, ledger: ledger)
        #expect(second.action == .adjustmentCreated && second.entry?.units == 200 && second.units == 500)
        let settled = LedgerHistory(
            ledger.entries + [LedgerEntry(entryID: 2, kind: .adjustment, idempotencyKey: second.entry?.idempotencyKey ?? "", units: 200)])
        #expect(Reconciler.decide(grant: grant, answer: full, ledger: settled).action == .alreadyRecorded)
    }

    @Test("a quantity void gives the exact units; without it the amount's share of the total does")
    func partialShares() {
        guard case .verified(let quantity) = read("PARTIALLY_REFUNDED", voids: [Self.void(quantity: 1)]),
            case .verified(let amount) = read("PARTIALLY_REFUNDED")
        else {
            Issue.record("a processed partial refund is Google's statement")
            return
        }
        #expect(quantity.refundedShare == RefundedShare(1, of: 3) && quantity.revokedQuantity == 1)
        #expect(amount.refundedShare == RefundedShare(990, of: 2_970) && amount.revokedQuantity == nil)
        #expect(quantity.refundKind == .prorated && amount.revocationPercentage == 33_333)
        #expect(quantity.refundsOnlyGrow && amount.refundsOnlyGrow, "Google documents no reduction of a refund")
    }

    @Test(
        "a full refund with no void while the sweep read well past it was made without revoke; with a void, it revoked; unknown otherwise; by amount, said so"
    )
    func revoke() {
        func statement(_ answer: StoreAnswer) -> StoreStatement? {
            if case .verified(let facts) = answer { return facts }
            return nil
        }
        let covering = GoogleVoidStore.Coverage(from: .distantPast, until: .distantFuture)
        let order = OrderAnswer.order(Self.record("REFUNDED").order)
        let without = GoogleOrderReading.answer(for: Self.grant, order: order, voids: [], ledger: .init(), coverage: covering)
        #expect(statement(without)?.refundRevokedAccess == false)
        let with = GoogleOrderReading.answer(for: Self.grant, order: order, voids: [Self.void()], ledger: .init(), coverage: covering)
        #expect(statement(with)?.refundRevokedAccess == true)
        #expect(statement(read("REFUNDED"))?.refundRevokedAccess == nil, "no sweep: nobody can tell")
        let recent = GoogleVoidStore.Coverage(from: .distantPast, until: Date(timeIntervalSince1970: 0))
        let early = GoogleOrderReading.answer(for: Self.grant, order: order, voids: [], ledger: .init(), coverage: recent)
        #expect(statement(early)?.refundRevokedAccess == nil, "the sweep has not read past the refund: its void may come")
        #expect(statement(read("PARTIALLY_REFUNDED"))?.refundedByAmount == true)
        #expect(statement(read("PARTIALLY_REFUNDED", voids: [Self.void(quantity: 1)]))?.refundedByAmount == false)
    }

    @Test("the order's reason, or a void's, names a chargeback or a fraud")
    func reasons() {
        func kind(_ answer: StoreAnswer) -> RefundKind? {
            if case .verified(let facts) = answer { return facts.refundKind }
            return nil
        }
        #expect(kind(read("REFUNDED")) == .full)
        #expect(kind(read("REFUNDED", voids: [Self.void(reason: 7)])) == .chargeback)
        #expect(kind(read("REFUNDED", voids: [Self.void(reason: 5)])) == .fraud)
        #expect(kind(read("REFUNDED", voids: [Self.void(reason: 6)])) == .fraud)
        #expect(kind(read("REFUNDED", voids: [Self.void(reason: 1)])) == .full)
    }

    @Test("an order processed again while a clawback is open, a canceled order and an unknown one go to a person")
    func reviews() {
        let open = LedgerHistory([LedgerEntry(entryID: 1, kind: .clawback, idempotencyKey: "clawback:1", units: 300)])
        #expect(review(read("PROCESSED", ledger: open)) == .refundNoLongerShown)
        #expect(review(read("CANCELED")) == .canceledAtGoogle)
        // Google does not document that its 404 proves the order never existed: never conclusive.
        guard case .notFound(let conclusive, _) = GoogleOrderReading.answer(for: Self.grant, order: .notFound, voids: [], ledger: .init())
        else {
            Issue.record("Google's 404 notFound is the store not knowing the order")
            return
        }
        #expect(!conclusive)
        #expect(isUnverified(GoogleOrderReading.answer(for: Self.grant, order: .unanswered("500"), voids: [], ledger: .init())))
        #expect(
            read("PROCESSED")
                == .verified(
                    StoreStatement(
                        transactionID: "token-1", environment: .production, bundleID: "com.studio.game", productID: "gems_100", quantity: 3,
                        reportsAppAccountToken: false, priceMilli: 2_970, currency: "EUR", refundsOnlyGrow: true)))
    }
}
