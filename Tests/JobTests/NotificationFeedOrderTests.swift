import Foundation
@testable import Job
import Reconciliation
import Testing

@Suite("The refund feed's order")
struct NotificationFeedOrderTests {
    @Test("the latest notification wins whatever order the feeds arrive in; at the same instant, the reversal does")
    func latestWins() {
        let refundedAt = Date(timeIntervalSince1970: 1_790_000_000)
        let refund = NotificationFeedGateway.Entry(date: refundedAt, reversal: false, facts: AppleFacts(transactionID: "1"))
        let reversal = NotificationFeedGateway.Entry(date: refundedAt + 60, reversal: true, facts: AppleFacts(transactionID: "1"))
        let sameInstantReversal = NotificationFeedGateway.Entry(date: refundedAt, reversal: true, facts: AppleFacts(transactionID: "1"))
        let laterRefund = NotificationFeedGateway.Entry(date: refundedAt + 120, reversal: false, facts: AppleFacts(transactionID: "1"))
        #expect(reversal.isNewer(than: refund) && !refund.isNewer(than: reversal))
        #expect(sameInstantReversal.isNewer(than: refund) && !refund.isNewer(than: sameInstantReversal))
        #expect(laterRefund.isNewer(than: reversal))
        #expect(!refund.isNewer(than: refund))
    }
}
