public import AppStore
import Foundation
public import Reconciliation

/// `--strategy receipt`: legacy `verifyReceipt` for grants that kept a StoreKit 1 receipt; Get Transaction
/// Info for the others. Honest about what receipts cannot show: a finished consumable is no longer in the
/// receipt Apple returns (and Apple documents cancellation dates only for non-consumables and
/// subscriptions), so such a grant stays unverified, with that reason, instead of passing as ok.
public struct ReceiptGateway: AppleGateway {
    let apps: AppleApps
    let perTransaction: TransactionInfoGateway

    public init(apps: AppleApps) {
        self.apps = apps
        perTransaction = TransactionInfoGateway(apps: apps)
    }

    public var statistics: AppStoreAPICounters { apps.statistics }

    public func answer(for grant: Grant) async -> AppleAnswer {
        guard let receipt = grant.receipt, !receipt.isEmpty else { return await perTransaction.answer(for: grant) }
        guard let client = apps.receiptClient else { return .unverified(reason: "no verifyReceipt client configured") }
        let response: VerifyReceiptResponse
        do {
            response = try await client.verify(receipt: receipt, sharedSecret: apps.sharedSecrets[grant.bundleID])
        } catch {
            return .unverified(reason: error.description)
        }
        if let bundle = response.receipt?.bundleID, !bundle.isEmpty, bundle != grant.bundleID {
            return .unverified(reason: "the receipt belongs to \(bundle), not \(grant.bundleID)")
        }
        guard let entry = response.purchases[grant.transactionID] else {
            return .unverified(reason: "transaction \(grant.transactionID) is not in the receipt Apple returned: finished consumables "
                + "leave receipts, so verifyReceipt cannot tell whether it was refunded; use --strategy transaction-info")
        }
        let cancelled = entry.cancellationDateMilliseconds.flatMap(Double.init).map { Date(timeIntervalSince1970: $0 / 1000) }
        return .verified(AppleFacts(
            environment: response.environment, productID: entry.productID, quantity: entry.quantity.flatMap(Int32.init),
            revocationDate: cancelled, revocationReason: entry.cancellationReason.flatMap(Int32.init)))
    }
}
