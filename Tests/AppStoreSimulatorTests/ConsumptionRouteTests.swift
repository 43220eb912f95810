import AppStore
import Foundation
import Testing

@testable import AppStoreSimulator

/// Send Consumption Information as the simulator serves it: Apple's validation and codes, the record of
/// what it accepted, and refund decisions that follow the answer.
@Suite("The simulator's Send Consumption Information and refund requests")
struct ConsumptionRouteTests {
    static let path = "/inApps/v2/transactions/consumption/"

    static func put(_ simulator: Simulator, _ id: String, _ json: String) throws -> (Int?, Int64?) {
        let reply = simulator.handle(
            SimulatorRequest(
                method: "PUT", path: path + id, headers: [("Authorization", "Bearer \(try SimulatorTests.token())")], body: Array(json.utf8)))
        guard case .respond(let status, _, let body) = reply else { return (nil, nil) }
        let code = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["errorCode"] as? Int64
        return (status, code)
    }

    static func requested(_ id: String, type: String = "Consumable", hoursAgo: Double = 1) -> TransactionRecord {
        var record = TransactionRecord(
            transactionId: id, bundleId: "com.studio.game", productId: "gems", type: type, purchaseDate: Date() - 86_400 * 3)
        record.refundRequest = RefundRequestRecord(date: Date() - hoursAgo * 3600)
        return record
    }

    @Test("each documented rule is answered with Apple's status and code; an accepted answer is 202 and recorded")
    func validation() throws {
        let simulator = try SimulatorTests.simulator([
            Self.requested("2000000001"), Self.requested("2000000002", type: "Auto-Renewable Subscription"),
        ])
        let good = #""customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false"#
        let cases: [(String, String, Int, Int64?)] = [
            ("2000000001", "{\(good),\"consumptionPercentage\":25000,\"refundPreference\":\"GRANT_PRORATED\"}", 202, nil),
            ("2000000001", #"{"customerConsented":false,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, 400, 4_000_035),
            ("2000000001", #"{"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, 400, 4_000_035),
            ("2000000001", #"{"customerConsented":1,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, 400, 4_000_035),
            ("2000000001", #"{"customerConsented":true,"deliveryStatus":"LOST","sampleContentProvided":false}"#, 400, 4_000_036),
            ("2000000001", #"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#, 400, 4_000_041),
            ("2000000001", "{\(good),\"refundPreference\":\"MAYBE\"}", 400, 4_000_044),
            ("2000000002", "{\(good),\"consumptionPercentage\":0}", 400, 4_000_209),
            // Apple computes an auto-renewable's share itself: GRANT_PRORATED without a percentage.
            ("2000000002", "{\(good),\"refundPreference\":\"GRANT_PRORATED\"}", 202, nil),
            ("2000000001", "{\(good),\"consumptionPercentage\":100001}", 400, nil),
            (
                "2000000001",
                #"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":false,"consumptionPercentage":1}"#, 400, nil
            ),
            ("2000000001", "{\(good),\"consumptionPercentage\":100000,\"refundPreference\":\"GRANT_PRORATED\"}", 400, nil),
            ("2000000001", "not json", 400, nil),
            ("20000!0001", "{\(good)}", 400, 4_000_006),
            ("2000000009", "{\(good)}", 404, 4_040_010),
        ]
        for (id, json, status, code) in cases {
            let (answered, errorCode) = try Self.put(simulator, id, json)
            #expect(answered == status, "\(json)")
            #expect(errorCode == code, "\(json)")
        }
        let received = simulator.consumptionAnswers
        #expect(received.map(\.transactionId) == ["2000000001", "2000000002"])
        #expect(received.first?.body.refundPreference == "GRANT_PRORATED")
        #expect(received.first?.solicited == true)
    }

    @Test("a request's CONSUMPTION_REQUEST is in the history at its date, and Apple decides 13 hours later from the answer")
    func decisions() throws {
        let now = Date()
        let clock = ClockBox(now)
        var records: [TransactionRecord] = []
        for index in 0..<200 { records.append(Self.requested(String(2_000_000_100 + index), hoursAgo: 2)) }
        let simulator = Simulator(
            world: World(apps: [SimulatorTests.app], transactions: records), chain: try SigningChain(),
            configuration: .init(rateLimits: nil, clock: { clock.now }))
        #expect(simulator.world.refundEvents(bundleID: "com.studio.game", environment: "Production").count == 200)
        // Half answered "consumed, decline", half "undelivered, grant": the second half is refunded more often.
        for (index, record) in records.enumerated() {
            let json =
                index % 2 == 0
                ? #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":100000,"refundPreference":"DECLINE"}"#
                : #"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":false,"refundPreference":"GRANT_FULL"}"#
            #expect(try Self.put(simulator, record.transactionId, json).0 == 202)
        }
        #expect(simulator.world.transactions.values.allSatisfy { $0.refundRequest?.decision == nil })
        clock.now = now + 12 * 3600
        _ = try Self.put(simulator, "2000000100", "{}")  // any request lets the simulator catch up with its clock
        let decided = simulator.world.transactions.values.filter { $0.refundRequest?.decision != nil }
        #expect(decided.count == 200)
        let refunded = decided.filter { $0.refundRequest?.decision == "REFUND" }
        let declinedAnswers = refunded.filter { Int($0.transactionId).map { ($0 - 2_000_000_100) % 2 == 0 } ?? false }.count
        let grantAnswers = refunded.count - declinedAnswers
        #expect(grantAnswers > declinedAnswers * 3)
        #expect(refunded.allSatisfy { $0.refund?.date == $0.refundRequest?.date.addingTimeInterval(RefundDecisions.decisionDelay) })
        let events = simulator.world.refundEvents(bundleID: "com.studio.game", environment: "Production")
        #expect(events.filter { $0.kind == .declined }.count == decided.count - refunded.count)
        #expect(events.filter { $0.kind == .refund }.count == refunded.count)
    }
}

final class ClockBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Date
    init(_ value: Date) { self.value = value }
    var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
