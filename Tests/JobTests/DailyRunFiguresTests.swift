import Reconciliation
import Storage
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// What a daily run's one metrics file says of its windows' runs: their figures added up, and the status an
/// operator must act on first.
@Suite("the daily run's figures")
struct DailyRunFiguresTests {
    @Test("the worst status wins: failed, then interrupted, then incomplete, then succeeded, in any order")
    func worst() {
        let order: [RunStatus] = [.succeeded, .incomplete, .interrupted, .failed]
        for (index, one) in order.enumerated() {
            for (otherIndex, other) in order.enumerated() {
                #expect(DailyRun.worse(one, other) == order[max(index, otherIndex)])
            }
        }
    }

    @Test("the windows' counters add up: counts, verdicts, actions, requests, units; apps not covered once each")
    func added() {
        var first = RunCounters()
        first.checked = 3
        first.verdicts = [.refunded: 2, .ok: 1]
        first.actions = [.clawbackCreated: 2]
        first.unitsClawedBack = 700
        first.storeRequests = 4
        first.voidsNotCovered = ["com.a: never swept whole"]
        var second = RunCounters()
        second.checked = 5
        second.verdicts = [.refunded: 1, .unverified: 4]
        second.actions = [.clawbackCreated: 1, .retryNextRun: 4]
        second.unitsClawedBack = 100
        second.storeRequests = 6
        second.voidsNotCovered = ["com.a: never swept whole", "com.b: never swept whole"]
        var total = RunCounters()
        total.add(first)
        total.add(second)
        #expect(total.checked == 8 && total.unitsClawedBack == 800 && total.storeRequests == 10)
        #expect(total.verdicts == [.refunded: 3, .ok: 1, .unverified: 4] && total.unverified == 4)
        #expect(total.actions == [.clawbackCreated: 3, .retryNextRun: 4])
        #expect(total.voidsNotCovered == ["com.a: never swept whole", "com.b: never swept whole"])
    }
}
