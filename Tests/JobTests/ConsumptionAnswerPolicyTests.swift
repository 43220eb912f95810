import AppStore
import AppStoreDriver
import AppStoreSimulator
import GooglePlayDriver
import Job
import Storage
import Testing

/// The answer policy: what clawback tells Apple from the game's facts.
@Suite("Consumption answers: the policy")
struct ConsumptionAnswerPolicyTests {
    static func policy(decline: Int = 50, prorate: Bool = true, samples: [String] = []) -> ConsumptionAnswerPolicy {
        var settings = ClawbackConfiguration.RefundRequests()
        settings.declineAtConsumedPercent = decline
        settings.prorateBelow = prorate
        var app = ClawbackConfiguration.AppRefundRequests()
        app.customerConsented = true
        app.sampleContentProducts = samples
        return ConsumptionAnswerPolicy(settings: settings, app: app)
    }

    static func delivered(_ consumed: Int64?, of granted: Int64 = 600) -> DeliveryFacts {
        DeliveryFacts(delivery: .delivered, playerID: "p", unitsGranted: granted, unitsConsumed: consumed)
    }

    @Test("delivery, share consumed and preference follow the grant, the hook and the thresholds")
    func cases() throws {
        let policy = Self.policy()
        let half = try policy.answer(facts: Self.delivered(300), productID: "gems_600", productType: .consumable)
        #expect(half.deliveryStatus == .delivered)
        #expect(half.consumptionPercentage == 50_000)
        #expect(half.refundPreference == .decline)
        let some = try policy.answer(facts: Self.delivered(1, of: 3), productID: "gems_600", productType: .consumable)
        #expect(some.consumptionPercentage == 33_333)
        #expect(some.refundPreference == .grantProrated)
        let twoThirds = try policy.answer(facts: Self.delivered(2, of: 3), productID: nil, productType: .consumable)
        #expect(twoThirds.consumptionPercentage == 66_667)
        let none = try policy.answer(facts: Self.delivered(0), productID: nil, productType: .consumable)
        #expect(none.refundPreference == .grantFull)
        let unknown = try policy.answer(facts: Self.delivered(nil), productID: nil, productType: .consumable)
        #expect(unknown.consumptionPercentage == nil)
        #expect(unknown.refundPreference == nil)
        let overspent = try policy.answer(facts: Self.delivered(900), productID: nil, productType: .consumable)
        #expect(overspent.consumptionPercentage == 100_000)
        let subscription = try policy.answer(facts: Self.delivered(300), productID: nil, productType: .autoRenewable)
        #expect(subscription.consumptionPercentage == nil)
        let undelivered = try policy.answer(facts: DeliveryFacts(delivery: .notDelivered), productID: nil, productType: .consumable)
        #expect(undelivered.deliveryStatus == .undeliveredOther)
        #expect(undelivered.consumptionPercentage == 0)
        #expect(undelivered.refundPreference == .grantFull)
        #expect(throws: ConsumptionAnswerPolicy.Unanswerable.deliveryUnknown) {
            try policy.answer(facts: DeliveryFacts(delivery: .unknown), productID: nil, productType: .consumable)
        }
        let noProrate = try Self.policy(prorate: false).answer(facts: Self.delivered(100), productID: nil, productType: .consumable)
        #expect(noProrate.refundPreference == nil)
        let sampled = try Self.policy(samples: ["gems_100"]).answer(facts: Self.delivered(0), productID: "gems_100", productType: .consumable)
        #expect(sampled.sampleContentProvided)
    }

    @Test("every answer the policy gives, for 20,000 generated facts and settings, passes Apple's rules")
    func alwaysValid() throws {
        var random = SeededGenerator(seed: 19)
        let types: [ProductType?] = [.consumable, .nonConsumable, .nonRenewing, .autoRenewable, nil]
        for _ in 0..<20_000 {
            let policy = Self.policy(decline: Int.random(in: 1...100, using: &random), prorate: Bool.random(using: &random))
            let granted = Int64.random(in: 0...10_000, using: &random)
            let consumed: Int64? = Bool.random(using: &random) ? nil : Int64.random(in: -5...20_000, using: &random)
            let delivery: DeliveryFacts.Delivery = [.delivered, .notDelivered, .unknown][Int.random(in: 0..<3, using: &random)]
            let facts = DeliveryFacts(delivery: delivery, playerID: "p", unitsGranted: granted, unitsConsumed: consumed)
            let type = types[Int.random(in: 0..<types.count, using: &random)]
            guard let answer = try? policy.answer(facts: facts, productID: "gems", productType: type) else {
                #expect(delivery == .unknown)
                continue
            }
            try answer.validate(productType: type)
            #expect(answer.customerConsented)
            #expect((answer.deliveryStatus == .delivered) == (delivery == .delivered))
        }
    }
}
