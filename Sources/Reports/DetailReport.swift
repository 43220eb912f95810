public import Foundation
import Reconciliation
public import Storage

/// The detail CSV: one row per flagged purchase. Column names are stable (finance's spreadsheets and
/// scripts key on them; new ones are added at the end); docs/finance.md explains each one.
public enum DetailReport {
    public static let columns = [
        "run_id", "window", "bundle_id", "environment", "transaction_id", "original_transaction_id", "player_id", "product_id",
        "quantity", "units_granted", "units_clawed_back", "units_change", "verdict", "action", "revocation_date", "revocation_type",
        // apple_currency and apple_price_informational: App Store rows only, deprecated for store_currency and
        // store_price_informational (every store's), and gone in the next major release.
        "revocation_reason", "revocation_reason_meaning", "refund_percentage", "purchase_date", "apple_currency",
        "apple_price_informational", "refunded_amount_informational", "storefront", "detail",
        // The game's side: the latest entry these runs wrote for the purchase and what the game did with it.
        "ledger_entry_id", "entry_units", "entry_created", "outcome", "acknowledged_at", "units_applied", "pending_days",
        "entry_amount_informational", "recovered_amount_informational",
        // Which store, and a Google quantity-based partial refund's voided units.
        "store", "revoked_quantity",
        // The store's own order id (Google Play's GPA.…), and the price in the store's currency, whichever store.
        "order_id", "store_currency", "store_price_informational",
    ]

    /// `asOf`: the time the ledger's acknowledgements were read at (pending days count to it).
    public static func row(_ purchase: FlaggedPurchase, window: String, asOf: Date) -> [CSVField] {
        let currency = purchase.storeCurrency
        let price = purchase.storePriceMilli.map { CSVField.number(Money.format(milli: $0, currency: currency)) } ?? .empty
        // The Apple-named columns hold the App Store's data only (the store whose 1.x columns they are).
        let fillsFormerColumns = purchase.store == StoreCatalog.importDefault
        let position = purchase.position
        return [
            .integer(purchase.runID),
            .text(window),
            .text(purchase.bundleID),
            .text(purchase.environment),
            .text(purchase.transactionID),
            .text(purchase.originalTransactionID),
            .text(purchase.playerID),
            .text(purchase.productID),
            .integer(purchase.quantity),
            .integer(purchase.unitsGranted),
            .integer(purchase.unitsClawedBack),
            .integer(purchase.unitsChange),
            .text(purchase.verdict.rawValue),
            .text(purchase.action.rawValue),
            .optionalMoment(purchase.revocationDate),
            .optionalText(purchase.revocationType),
            purchase.revocationReason.map { .integer($0) } ?? .empty,
            .optionalText(purchase.revocationReason.map { RevocationReason(rawValue: Int32(clamping: $0)).description }),
            purchase.revocationPercentage.map { .number(Money.percentage(milli: $0)) } ?? .empty,
            .moment(purchase.purchasedAt),
            fillsFormerColumns ? .optionalText(currency) : .empty,
            fillsFormerColumns ? price : .empty,
            purchase.refundedAmountMilli.map { .number(Money.format(milli: $0, currency: currency)) } ?? .empty,
            .optionalText(purchase.storefront),
            .optionalText(purchase.detail),
            position.map { .integer($0.entryID) } ?? .empty,
            position.map { .integer($0.units) } ?? .empty,
            .optionalMoment(position?.createdAt),
            .optionalText(position?.status),
            .optionalMoment(position?.acknowledgedAt),
            position?.unitsApplied.map { .integer($0) } ?? .empty,
            position.flatMap { $0.outcome == nil ? CSVField.integer($0.pendingDays(asOf: asOf)) : nil } ?? .empty,
            purchase.entryAmountMilli.map { .number(Money.format(milli: $0, currency: currency)) } ?? .empty,
            purchase.recoveredAmountMilli.map { .number(Money.format(milli: $0, currency: currency)) } ?? .empty,
            .text(purchase.store.rawValue),
            purchase.revokedQuantity.map { .integer($0) } ?? .empty,
            .optionalText(purchase.orderID),
            .optionalText(currency),
            price,
        ]
    }
}
