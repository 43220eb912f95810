public import AppStore
import Foundation
public import Job
public import Reconciliation

/// `--strategy receipt`: for apps with only a shared secret (no App Store Server API key), or grants that
/// kept only a StoreKit 1 receipt. A receipt never decides on its own: Apple sets `cancellation_date` only
/// for non-consumables and subscriptions, a stored receipt predates any later refund, and a receipt carries
/// no refund type, percentage or app account token. So:
/// - every grant of an app with API credentials is decided by Get Transaction Info;
/// - a grant of an app with only a shared secret is `unverified`, with what verifyReceipt showed in the
///   reason (a cancellation to look at, or nothing a receipt could show), until the app gets a key.
public struct ReceiptGateway: StoreGateway {
    let apps: AppleApps
    let perTransaction: TransactionInfoGateway

    public init(apps: AppleApps) {
        self.apps = apps
        perTransaction = TransactionInfoGateway(apps: apps)
    }

    public var statistics: AppStoreAPICounters { apps.statistics }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer {
        if apps.clients[grant.bundleID] != nil { return await perTransaction.answer(for: grant) }
        let missingKey = "no App Store Server API key is configured for \(grant.bundleID), and a receipt cannot decide"
        guard let receipt = grant.receipt, !receipt.isEmpty else { return .unverified(reason: missingKey + " (the grant kept no receipt)") }
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
            return .unverified(reason: missingKey + ": the purchase is not in the receipt Apple returned (finished consumables leave receipts)")
        }
        if let cancelled = entry.cancellationDateMilliseconds {
            return .unverified(reason: missingKey + ": verifyReceipt shows a cancellation at \(cancelled) ms, without the refund type or percentage")
        }
        return .unverified(reason: missingKey + ": verifyReceipt shows no cancellation, which it never shows for a consumable")
    }
}
