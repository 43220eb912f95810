import Foundation
import Reconciliation
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

@Suite("The refund feed's order")
struct NotificationFeedOrderTests {
    typealias Entry = NotificationFeedGateway.Entry

    @Test("the latest notification wins whatever order the feeds arrive in; a refund and a reversal at one instant are a tie, asked per transaction")
    func latestWins() {
        let refundedAt = Date(timeIntervalSince1970: 1_790_000_000)
        let refund = Entry(date: refundedAt, reversal: false, facts: StoreStatement(transactionID: "1"))
        let reversal = Entry(date: refundedAt + 60, reversal: true, facts: StoreStatement(transactionID: "1"))
        let sameInstantReversal = Entry(date: refundedAt, reversal: true, facts: StoreStatement(transactionID: "1"))
        let laterRefund = Entry(date: refundedAt + 120, reversal: false, facts: StoreStatement(transactionID: "1"))
        for order in [[refund, reversal, laterRefund], [laterRefund, reversal, refund], [reversal, laterRefund, refund]] {
            let merged = order.reduce(nil as Entry?) { Entry.merge($1, into: $0) }
            #expect(merged?.date == laterRefund.date && merged?.reversal == false && merged?.tied == false)
        }
        for order in [[refund, sameInstantReversal], [sameInstantReversal, refund]] {
            #expect(order.reduce(nil as Entry?) { Entry.merge($1, into: $0) }?.tied == true)
        }
        // The same notification resent keeps its signedDate: no tie.
        #expect(Entry.merge(refund, into: refund).tied == false)
    }
}
