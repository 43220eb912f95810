public import AppStore
import Foundation
public import Reconciliation

/// `--strategy receipt`: legacy `verifyReceipt` for grants that kept a StoreKit 1 receipt; Get Transaction
/// Info for the others. Honest about what receipts cannot show:
/// - a receipt lists no app account token, no refund type and no percentage, so a cancellation it shows is
///   only a reason to ask: Get Transaction Info gives the facts the clawback is computed from;
/// - a purchase it lists without a cancellation is `noRefundReported` (Apple reported no refund; it did not
///   confirm the grant's token or price);
/// - a finished consumable is no longer in the receipt Apple returns (and Apple documents cancellation
///   dates only for non-consumables and subscriptions), so such a grant is asked per transaction.
public struct ReceiptGateway: AppleGateway {
    let apps: AppleApps
    let perTransaction: TransactionInfoGateway

    public init(apps: AppleApps) {
        self.apps = apps
        perTransaction = TransactionInfoGateway(apps: apps)
    }

    public var statistics: AppStoreAPICounters { apps.statistics }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> AppleAnswer {
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
        // Finished consumables leave receipts; a cancellation needs Apple's type and percentage; silence
        // cannot close an open clawback. Get Transaction Info answers all three.
        guard let entry = response.purchases[grant.transactionID], entry.cancellationDateMilliseconds == nil, ledger.outstandingUnits == 0
        else { return await perTransaction.answer(for: grant) }
        return .noRefundReported(source: "verifyReceipt lists the purchase without a cancellation (\(response.environment ?? "unknown environment"))")
    }
}
