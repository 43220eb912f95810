public import Foundation
import Postgres

/// What the game knows of a purchase, as every store's refund question reads it: its grant, and the studio's
/// hooks `clawback.units_consumed` (how much of it the player consumed) and `clawback.usage_events` (the
/// player's uses of it, the latest 1,000). A hook that fails is the caller's to set the question aside for.
enum GameHooks {
    /// A purchase's grant, and the units the hook says were consumed.
    struct Granted {
        var transactionID: String
        var playerID: String
        var productID: String
        var unitsGranted: Int64
        var purchasedAt: Date
        var obfuscatedAccountID: String?
        var unitsConsumed: Int64?
    }

    /// The grant of `transactionID` in `store`'s app `bundleID`, with the units consumed; nil when the game has none.
    static func granted(transactionID: String, store: String, bundleID: String, on connection: DatabaseConnection) throws -> Granted? {
        guard
            let row = try connection.query(
                """
                SELECT chosen.transaction_id, chosen.player_id, chosen.product_id, chosen.units_granted, chosen.purchased_at,
                    chosen.obfuscated_account_id,
                    clawback.units_consumed(chosen.transaction_id, chosen.player_id, chosen.product_id, chosen.units_granted)
                FROM (
                    SELECT g.transaction_id, g.player_id, g.product_id, g.units_granted, g.purchased_at, g.obfuscated_account_id
                    FROM clawback.grants g
                    WHERE g.transaction_id = \(transactionID) AND g.store = \(store)::clawback.store AND g.bundle_id = \(bundleID)
                    LIMIT 1
                ) chosen
                """
            ).first
        else { return nil }
        return Granted(
            transactionID: try row.decode(String.self, at: 0), playerID: try row.decode(String.self, at: 1),
            productID: try row.decode(String.self, at: 2), unitsGranted: try row.decode(Int64.self, at: 3),
            purchasedAt: try row.decode(Date.self, at: 4), obfuscatedAccountID: try row.decode(String?.self, at: 5),
            unitsConsumed: try row.decode(Int64?.self, at: 6))
    }

    /// The latest 1,000 uses the studio's hook gives for the purchase, oldest first.
    static func uses(of granted: Granted, on connection: DatabaseConnection) throws -> [PurchaseUse] {
        try connection.query(
            """
            SELECT used_at, description FROM (
                SELECT used_at, description FROM clawback.usage_events(\(granted.transactionID), \(granted.playerID), \(granted.productID))
                ORDER BY used_at DESC NULLS LAST LIMIT 1000
            ) latest ORDER BY used_at NULLS FIRST
            """
        ).rows.map { row throws(PostgresError) in PurchaseUse(at: try row.decode(Date?.self, at: 0), description: try row.decode(String?.self, at: 1))
        }
    }
}

/// A use of a purchase in the game, from the studio's `clawback.usage_events` hook: what every store's
/// refund question may show of it.
public struct PurchaseUse: Sendable, Equatable {
    public var at: Date?
    public var description: String?

    public init(at: Date?, description: String?) {
        self.at = at
        self.description = description
    }
}
