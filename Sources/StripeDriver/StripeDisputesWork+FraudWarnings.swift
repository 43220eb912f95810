import Foundation
import Logging
import Storage
import Stripe

// Radar's early fraud warnings, kept by the disputes job for finance (docs/stripe.md, "Early fraud warnings").
extension StripeDisputesWork {
    /// Radar's early fraud warnings of the lookback about payments the game granted, kept for finance. Read
    /// after the disputes are answered, and never their failure: a key without the permission, or Stripe
    /// unreachable, leaves the warnings for the next run and says so.
    func keepFraudWarnings(since: Int64, outcome: inout StripeDisputesRun.Outcome) async throws {
        var warnings: [EarlyFraudWarning] = []
        do {
            try await client.list(EarlyFraudWarning.self, "/v1/radar/early_fraud_warnings", query: [("created[gte]", String(since))]) {
                warnings += $0
            }
        } catch {
            logger.warning("Radar's early fraud warnings could not be read; asked again next run", metadata: ["error": "\(error)"])
            outcome.fraudWarningsUnread = "\(error)"
            return
        }
        outcome.fraudWarningsRead = warnings.count
        var seen: [StripeFraudWarningStore.Seen] = []
        for warning in warnings.sorted(by: { $0.id < $1.id }) {
            guard let paymentIntent = warning.paymentIntent,
                let shop = try await session.run({ [shops] in try StripeDisputeStore.shop(ofPaymentIntent: paymentIntent, among: shops, on: $0) })
            else { continue }
            seen.append(
                StripeFraudWarningStore.Seen(
                    warningID: warning.id, shop: shop, paymentIntent: paymentIntent, charge: warning.charge, fraudType: warning.fraudType,
                    actionable: warning.actionable, warnedAt: warning.created))
        }
        outcome.fraudWarningsNew = try await session.run { [seen] connection in
            let before = try StripeFraudWarningStore.count(on: connection)
            try StripeFraudWarningStore.record(seen, on: connection)
            return try StripeFraudWarningStore.count(on: connection) - before
        }
    }
}
