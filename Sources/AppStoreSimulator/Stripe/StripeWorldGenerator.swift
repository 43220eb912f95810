public import Foundation

/// A generated web shop on Stripe: payments over the months before `end` in several currencies (a
/// zero-decimal and a three-decimal one among them), some refunded in full or in part (a few refunds still
/// pending, failed or canceled), some disputed at every stage, a few never collected; and the game's grants
/// of them, with a few grants of payments Stripe never had.
public enum StripeWorldGenerator {
    public struct Output: Sendable {
        public var world: StripeWorld
        public var grants: [StripeGrantLine]
    }

    /// A Stripe grant as a line of `clawback grants import`.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    // The properties are the grants table's column names, so that the synthesized Codable writes them as they are.
    public struct StripeGrantLine: Sendable, Codable, Equatable {
        public var store = "stripe"
        public var transaction_id: String
        public var bundle_id: String
        public var product_id: String
        public var environment = "Production"
        public var player_id: String
        public var units_granted: Int64
        public var price_milli: Int64?
        public var currency: String?
        public var purchased_at: Date
    }

    /// (currency, a price in its minor unit, thousandths per minor unit)
    static let prices: [(String, Int64, Int64)] = [("eur", 499, 10), ("usd", 999, 10), ("jpy", 800, 1000), ("kwd", 1500, 1)]
    static let refundStatuses = ["succeeded", "succeeded", "succeeded", "succeeded", "pending", "failed", "canceled", "requires_action"]
    static let disputeStatuses = ["lost", "needs_response", "under_review", "won", "warning_needs_response", "warning_closed", "prevented"]

    public static func generate(
        payments count: Int, start: Date, end: Date, shop: String = "web.studio.game", refundRate: Double = 0.1, disputeRate: Double = 0.03,
        unknownShare: Double = 0.002, key: String = "rk_test_simulator", seed: UInt64 = 7, now: Date? = nil
    ) -> Output {
        // A dispute awaiting a response is due ten days after it was opened, or after `now` (default `end`),
        // whichever is later: the shop can still answer it.
        let dueAfter = now ?? end
        var random = SeededGenerator(seed: seed ^ 0x57A1_9E00)
        var payments: [StripePaymentRecord] = []
        var grants: [StripeGrantLine] = []
        let span = max(end.timeIntervalSince(start), 1)
        for index in 0..<count {
            let (currency, price, milliPerMinor) = prices[Int.random(in: 0..<prices.count, using: &random)]
            let created = start + Double.random(in: 0..<span, using: &random)
            let id = "pi_\(String(format: "%08d", index))\(String(UInt32.random(in: 0...UInt32.max, using: &random), radix: 36))"
            let collected = Double.random(in: 0..<1, using: &random) > 0.01
            var payment = StripePaymentRecord(
                id: id, amount: price, currency: currency, created: created, status: collected ? "succeeded" : "canceled")
            if collected && Double.random(in: 0..<1, using: &random) < refundRate {
                let status = refundStatuses[Int.random(in: 0..<refundStatuses.count, using: &random)]
                let part = Bool.random(using: &random) ? price : price / 2
                payment.refunds.append(
                    StripeRefundRecord(
                        id: "re_" + id.dropFirst(3), amount: part, status: status,
                        created: created + Double.random(in: 3_600..<30 * 86_400, using: &random)))
            }
            if collected && Double.random(in: 0..<1, using: &random) < disputeRate {
                let status = disputeStatuses[Int.random(in: 0..<disputeStatuses.count, using: &random)]
                let taken = payment.refunds.filter { $0.status == "succeeded" }.reduce(0) { $0 + $1.amount }
                if taken < price {
                    let opened = created + Double.random(in: 86_400..<60 * 86_400, using: &random)
                    let awaiting = status == "needs_response" || status == "warning_needs_response"
                    var dispute = StripeDisputeRecord(
                        id: "dp_" + id.dropFirst(3), amount: price - taken, status: status, created: opened,
                        dueBy: awaiting ? max(opened, dueAfter) + 10 * 86_400 : nil)
                    // Half the won disputes have their fee returned (no draw: the world of a seed stays the same).
                    if status == "won" { dispute.feeReturned = index % 2 == 0 }
                    // A fraud dispute is often preceded by the issuer's early fraud warning, a day before.
                    if dispute.reason == "fraudulent" && index % 3 != 0 {
                        payment.fraudWarnings = [
                            StripeFraudWarningRecord(id: "issfr_" + id.dropFirst(3), actionable: false, created: opened - 86_400)
                        ]
                    }
                    payment.disputes.append(dispute)
                }
            }
            // Now and then a warning no dispute followed (yet): still actionable.
            if collected && payment.disputes.isEmpty && index % 97 == 13 {
                payment.fraudWarnings = [
                    StripeFraudWarningRecord(id: "issfr_" + id.dropFirst(3), fraudType: "unauthorized_use_of_card", created: created + 2 * 86_400)
                ]
            }
            payments.append(payment)
            grants.append(
                StripeGrantLine(
                    transaction_id: id, bundle_id: shop, product_id: "gems_100", player_id: "player-\(index % max(count / 3, 1))",
                    units_granted: 100, price_milli: price * milliPerMinor, currency: currency.uppercased(), purchased_at: created + 5))
            if Double.random(in: 0..<1, using: &random) < unknownShare {
                grants.append(
                    StripeGrantLine(
                        transaction_id: "pi_forged\(index)", bundle_id: shop, product_id: "gems_100", player_id: "player-\(index % 11)",
                        units_granted: 100, price_milli: nil, currency: nil, purchased_at: created + 7))
            }
        }
        return Output(world: StripeWorld(keys: [key], payments: payments), grants: grants)
    }
}
