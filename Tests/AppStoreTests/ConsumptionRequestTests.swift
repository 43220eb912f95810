import AppStore
import AppStoreSimulator
import Foundation
import Testing

/// Apple's rules for a Send Consumption Information (v2) body, each checked before anything is sent.
@Suite("Consumption answers: Apple's rules, checked locally")
struct ConsumptionRequestTests {
    static func body(
        consented: Bool = true, percentage: Int32? = 40_000, delivery: DeliveryStatus = .delivered, preference: RefundPreference? = .grantProrated,
        sample: Bool = false
    ) -> ConsumptionRequest {
        ConsumptionRequest(
            customerConsented: consented, consumptionPercentage: percentage, deliveryStatus: delivery, refundPreference: preference,
            sampleContentProvided: sample)
    }

    @Test("a body within every rule passes, for every delivery status and preference that fits it")
    func valid() throws {
        try Self.body().validate(productType: .consumable)
        try Self.body(percentage: 100_000, preference: .decline).validate(productType: .consumable)
        try Self.body(percentage: 0, preference: .grantFull).validate(productType: .nonConsumable)
        try Self.body(percentage: nil, preference: nil).validate(productType: .autoRenewable)
        // Apple computes an auto-renewable's prorated share itself.
        try Self.body(percentage: nil, preference: .grantProrated).validate(productType: .autoRenewable)
        for status in DeliveryStatus.known where status != .delivered {
            try Self.body(percentage: 0, delivery: status, preference: .grantFull).validate(productType: .consumable)
            try Self.body(percentage: nil, delivery: status, preference: nil).validate(productType: nil)
        }
    }

    @Test("each of Apple's rules refuses what breaks it, naming the rule")
    func rules() {
        let cases: [(ConsumptionRequest, ProductType?, ConsumptionRequestError)] = [
            (Self.body(consented: false), .consumable, .customerNotConsented),
            (Self.body(delivery: DeliveryStatus(rawValue: "DELIVERED_LATE")), .consumable, .unknownDeliveryStatus("DELIVERED_LATE")),
            (Self.body(preference: RefundPreference(rawValue: "GRANT_SOME")), .consumable, .unknownRefundPreference("GRANT_SOME")),
            (Self.body(percentage: 0, preference: nil), .autoRenewable, .percentageForAutoRenewable),
            (Self.body(percentage: 100_001, preference: .decline), .consumable, .percentageOutOfRange(100_001)),
            (Self.body(percentage: -1, preference: nil), .consumable, .percentageOutOfRange(-1)),
            (
                Self.body(percentage: 5, delivery: .undeliveredServerOutage, preference: .grantFull), .consumable,
                .percentageWhenUndelivered("UNDELIVERED_SERVER_OUTAGE", 5)
            ),
            (Self.body(percentage: 0, preference: .grantProrated), .consumable, .proratedWithoutPartialConsumption(0)),
            (Self.body(percentage: 100_000, preference: .grantProrated), .consumable, .proratedWithoutPartialConsumption(100_000)),
            (Self.body(percentage: nil, preference: .grantProrated), .consumable, .proratedWithoutPartialConsumption(nil)),
        ]
        for (body, type, expected) in cases {
            #expect(throws: expected, "\(body)") { try body.validate(productType: type) }
        }
    }

    @Test("the JSON carries Apple's field names and leaves out what is not known")
    func encoding() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let full = String(decoding: try encoder.encode(Self.body(sample: true)), as: UTF8.self)
        #expect(
            full
                == #"{"consumptionPercentage":40000,"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","sampleContentProvided":true}"#
        )
        let sparse = String(decoding: try encoder.encode(Self.body(percentage: nil, preference: nil)), as: UTF8.self)
        #expect(sparse == #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#)
    }

    @Test("75 answers at once against Apple's 50 per second: the client's own pacing keeps every one clear of 429")
    func applesRate() async throws {
        var purchases: [TransactionRecord] = []
        for index in 0..<75 {
            var purchase = SimulatorFixture.purchase(String(2_000_000_000_000_200 + index))
            purchase.refundRequest = RefundRequestRecord(date: Date() - 600)
            purchases.append(purchase)
        }
        try await SimulatorFixture.with(transactions: purchases, rateLimits: SimulatorConfiguration.appleRates) { fixture in
            // Apple's published rates, as the job uses them.
            let client = fixture.client(rates: .init())
            try await withThrowingTaskGroup(of: Void.self) { group in
                for purchase in purchases {
                    group.addTask {
                        try await client.sendConsumptionInformation(
                            purchase.transactionId, environment: .production, answer: Self.body(), productType: .consumable)
                    }
                }
                try await group.waitForAll()
            }
            #expect(fixture.simulator.consumptionAnswers.count == 75)
            #expect(fixture.simulator.stats.snapshot["status.429"] == nil)
            #expect(client.statistics.rateLimited == 0)
        }
    }

    @Test("the client sends nothing for a body that breaks a rule, and sends a valid one to Apple (202)")
    func clientChecksFirst() async throws {
        let purchase = SimulatorFixture.purchase("2000000000000101")
        var open = purchase
        open.refundRequest = RefundRequestRecord(date: Date() - 600)
        try await SimulatorFixture.with(transactions: [open]) { fixture in
            let client = fixture.client()
            await #expect(throws: ConsumptionAnswerError.self) {
                try await client.sendConsumptionInformation(
                    open.transactionId, environment: .production, answer: Self.body(consented: false), productType: .consumable)
            }
            #expect(fixture.simulator.consumptionAnswers.isEmpty)
            #expect(client.statistics.requests == 0)
            try await client.sendConsumptionInformation(open.transactionId, environment: .production, answer: Self.body(), productType: .consumable)
            let received = fixture.simulator.consumptionAnswers
            #expect(received.count == 1)
            #expect(received.first?.body.consumptionPercentage == 40_000)
            #expect(received.first?.solicited == true)
            #expect(received.first?.late == false)
        }
    }
}
