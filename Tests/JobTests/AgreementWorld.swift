import AppStoreSimulator
import Foundation
import Reconciliation

/// A generated world that looks like production rather than like a fixture: players with several Apple
/// accounts and app account tokens on most (not all) grants, prices on some, receipts on a few, sandbox
/// grants older than the sandbox's 30 days of notification history, refunds of every type (some Apple never
/// notified, some with a type, percentage or reason this version does not know), reversals, grants Apple
/// does not know and grants that disagree with Apple, and hostile player ids. Apple's side is given twice:
/// `before` (what the first run sees: some refunds not yet made, none reversed) and `after`.
struct AgreementWorld {
    var before: [TransactionRecord] = []
    var after: [TransactionRecord] = []
    var grants: [GeneratedGrant] = []
    /// Transaction ids whose grant kept a legacy receipt.
    var receipts: [String] = []
    /// Refunds Apple never notified (no notification URL configured then): outside the notifications
    /// strategy's documented precondition.
    var unnotified: Set<String> = []
    /// What a clean transaction-info run must conclude on `after`, once a first one ran on `before`,
    /// worked out from the world itself: the oracle the reference is checked against.
    var expected: [String: String] = [:]

    static let products: [(id: String, units: Int64, priceMilli: Int64)] = [
        ("gems_100", 100, 990), ("gems_600", 600, 4990), ("coins_250", 250, 1990), ("gems_6500", 6500, 49_990), ("remove_ads", 1, 2990),
    ]
    static let hostilePlayers = [
        "p'\"; DROP TABLE clawback.ledger; --", "=HYPERLINK(\"http://x\")", "+1-cmd|' /C calc'!A0", "玩家 🎮\u{202E}evil",
        "line\nbreak,comma",
    ]

    init(grants count: Int, seed: UInt64, bundleID: String, now: Date) {
        var random = SeededGenerator(seed: seed)
        func chance(_ share: Double) -> Bool { Double.random(in: 0..<1, using: &random) < share }
        let day = 86_400.0
        struct Player {
            let id: String
            let token: String?
            let accounts: [String]
        }
        let players: [Player] = (0..<max(1, count / 3)).map { index in
            let id = index < Self.hostilePlayers.count ? Self.hostilePlayers[index] : "player-\(seed)-\(index)"
            let accountCount = chance(0.7) ? 1 : (chance(0.8) ? 2 : 3)
            return Player(
                id: id, token: chance(0.8) ? UUID(uuidString: Self.uuid(&random))?.uuidString.lowercased() : nil,
                accounts: (0..<accountCount).map { "acct-\(seed)-\(index)-\($0)" })
        }
        for index in 0..<count {
            let player = players[Int.random(in: 0..<players.count, using: &random)]
            let id = String(3_000_000_000 + Int(seed % 1000) * 1_000_000 + index)
            let product = Self.products[Int.random(in: 0..<Self.products.count, using: &random)]
            let sandbox = chance(0.12)
            let daysAgo = Double.random(in: 1...58, using: &random)  // the fixture's window reaches 60 days back
            let purchased = Date(timeIntervalSince1970: (now.timeIntervalSince1970 - daysAgo * day).rounded())
            let quantity: Int32 = chance(0.85) ? 1 : Int32.random(in: 2...3, using: &random)
            let priced = chance(0.8)
            // The app sets the player's token on most purchases when the player has one.
            let appleToken = player.token.flatMap { chance(0.9) ? $0 : nil }
            var record = TransactionRecord(
                transactionId: id, customerId: player.accounts[Int.random(in: 0..<player.accounts.count, using: &random)],
                bundleId: bundleID, productId: product.id, type: product.id == "remove_ads" ? "Non-Consumable" : "Consumable",
                quantity: quantity, priceMilli: priced ? product.priceMilli * Int64(quantity) : nil, currency: priced ? "USD" : nil,
                storefront: priced ? "USA" : nil, environment: sandbox ? "Sandbox" : "Production", purchaseDate: purchased,
                appAccountToken: appleToken)
            var grant = GeneratedGrant(
                transaction_id: id, original_transaction_id: id, bundle_id: bundleID, product_id: product.id,
                environment: record.environment, player_id: player.id, app_account_token: appleToken, quantity: quantity,
                units_granted: product.units * Int64(quantity), price_milli: record.priceMilli, currency: record.currency,
                storefront: record.storefront, purchased_at: purchased)
            // Grants that disagree with Apple, and grants Apple does not know.
            let roll = Double.random(in: 0..<1, using: &random)
            if roll < 0.02 {
                grant.product_id = "gems_600_forged"
            } else if roll < 0.03, appleToken != nil {
                grant.app_account_token = Self.uuid(&random).lowercased()
            } else if roll < 0.04, !sandbox {
                record.environment = "Sandbox"
            }
            let unknown = roll >= 0.04 && roll < 0.07
            let mismatched = grant.product_id != record.productId || grant.app_account_token != appleToken
            var openClawback = false
            if chance(0.18) {
                let refundedDaysAgo = Double.random(in: 0.05...(daysAgo - 0.01), using: &random)
                var refund = RefundRecord(
                    date: Date(timeIntervalSince1970: (now.timeIntervalSince1970 - refundedDaysAgo * day).rounded()),
                    reason: chance(0.5) ? 1 : 0)
                let kind = Double.random(in: 0..<1, using: &random)
                if kind < 0.45 {
                    refund.type = "REFUND_FULL"
                } else if kind < 0.75 {
                    refund.type = "REFUND_PRORATED"
                    refund.percentage = chance(0.9) ? Int32.random(in: 1...99_999, using: &random) : nil
                } else if kind < 0.87 {
                    refund.type = "FAMILY_REVOKE"
                } else if kind < 0.92 {
                    refund.type = "REFUND_SOMETHING_NEW"
                } else {
                    refund.type = "REFUND_FULL"
                    refund.reason = 7
                }
                if chance(0.15) {
                    refund.notified = false
                    unnotified.insert(id)
                }
                let reversed = chance(0.2)
                if reversed {
                    refund.reversedDate = Date(timeIntervalSince1970: (now.timeIntervalSince1970 - refundedDaysAgo * day * 0.4).rounded())
                }
                // The first run sees two refunds in three, none reversed yet; some as a prorated refund that later
                // became full, some at a revocation date Apple later moved.
                if index % 3 != 0 {
                    var first = record
                    var early = refund
                    early.reversedDate = nil
                    let change = Double.random(in: 0..<1, using: &random)
                    if refund.type == "REFUND_FULL" && refund.reason != 7 && change < 0.3 {
                        early.type = "REFUND_PRORATED"
                        early.percentage = 50_000
                    } else if change > 0.85 {
                        early.date = refund.date - 3600
                    }
                    first.refund = early
                    if !unknown { before.append(first) }
                    // A prorated refund so small that it rounds to no units leaves nothing open to reverse.
                    let taken =
                        early.type == "REFUND_PRORATED"
                        ? ProratedUnits.compute(units: grant.units_granted, percentageMilli: early.percentage ?? 0, rule: .nearestHalfUp)
                        : grant.units_granted
                    openClawback = !unknown && record.environment == grant.environment && Self.spelledOut(early) && taken > 0
                } else if !unknown {
                    before.append(record)
                }
                record.refund = refund
            } else if !unknown {
                before.append(record)
            }
            expected[id] = {
                if unknown { return "unknown_to_apple" }
                if record.environment != grant.environment { return "mismatch" }
                if let refund = record.refund, refund.reversedDate == nil {
                    return refund.type == "FAMILY_REVOKE" ? "revoked" : "refunded"
                }
                if openClawback { return "refund_reversed" }
                return mismatched ? "mismatch" : "ok"
            }()
            if !unknown { after.append(record) }
            grants.append(grant)
            if chance(0.1) { receipts.append(id) }
        }
    }

    /// A refund whose units the rules can compute (the others go to review and take nothing).
    static func spelledOut(_ refund: RefundRecord) -> Bool {
        guard refund.reason == 0 || refund.reason == 1 else { return false }
        switch refund.type {
        case "REFUND_FULL", "FAMILY_REVOKE": return true
        case "REFUND_PRORATED": return refund.percentage.map { (0...100_000).contains($0) } ?? false
        default: return false
        }
    }

    static func uuid(_ random: inout SeededGenerator) -> String {
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }

}
