public import Foundation
import GooglePlay
import _CryptoExtras

/// A generated Google Play world: one app, a service account allowed to read it (its key file written
/// beside the world), and one-time purchases over the months before `end`, some refunded (a share of them
/// charged back), some partly refunded, a few canceled or still pending.
public enum GooglePlayWorldGenerator {
    public struct Output: Sendable {
        public var world: GooglePlayWorld
        /// The service account's key file (JSON), its `token_uri` the simulator's token path on `tokenBaseURL`.
        public var keyFile: Data
        /// What the game granted, as `clawback grants import` reads it: one grant per order (a canceled or
        /// pending one too: the game granted it when it saw the purchase), and a few for orders Google never
        /// had (forged purchases).
        public var grants: [GoogleGrantLine]
    }

    /// A Google Play grant as a line of `clawback grants import`.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    // The properties are the grants table's column names, so that the synthesized Codable writes them as they are.
    public struct GoogleGrantLine: Sendable, Codable, Equatable {
        public var store = "google_play"
        public var transaction_id: String
        public var order_id: String
        public var bundle_id: String
        public var product_id: String
        public var environment = "Production"
        public var player_id: String
        public var obfuscated_account_id: String?
        public var quantity: Int
        public var units_granted: Int64
        public var price_milli: Int64?
        public var currency: String?
        public var purchased_at: Date
    }

    /// Half of `price`, in whole units of the currency's smallest coin (yen, cents).
    static func half(_ price: Int64, _ currency: String) -> Int64 {
        let coin: Int64 = currency == "JPY" ? 1000 : 10
        return price / 2 / coin * coin
    }

    /// Units a product grants per item: its gems.
    static func units(_ productID: String) -> Int64 { Int64(productID.split(separator: "_").last.flatMap { Int($0) } ?? 100) }

    public static let packageName = "com.studio.game"
    public static let account = "clawback@studio-project.iam.gserviceaccount.com"
    /// The topic the app's real-time notifications go to, and the pull subscription clawback reads.
    public static let notificationTopic = "projects/studio-project/topics/play-notifications"
    public static let subscriptionName = "projects/studio-project/subscriptions/clawback"

    public static func generate(
        orders count: Int, start: Date, end: Date, refundRate: Double = 0.03, unknownShare: Double = 0.002, seed: UInt64 = 7,
        tokenBaseURL: String = "http://127.0.0.1:8080", now: Date = Date()
    ) throws -> Output {
        var random = SeededGenerator(seed: seed ^ 0x6006_1E00)
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let package = GooglePackageRecord(
            packageName: packageName, serviceAccounts: [account: key.publicKey.pemRepresentation], notificationTopic: notificationTopic)
        let products: [(id: String, priceMilli: Int64)] = [("gems_100", 990), ("gems_600", 4_990), ("gems_1500", 9_990)]
        var orders: [GoogleOrderRecord] = []
        orders.reserveCapacity(count)
        for index in 0..<count {
            let product = products[Int.random(in: 0..<products.count, using: &random)]
            let bought = start + Double.random(in: 0..<(end.timeIntervalSince(start)), using: &random)
            let quantity = Double.random(in: 0..<1, using: &random) < 0.1 ? Int.random(in: 2...5, using: &random) : 1
            let currency = ["EUR", "USD", "JPY", "BRL"][index % 4]
            // Each currency's own price point: ¥150 for 0.99, R$4.95.
            let unitPrice = product.priceMilli * ["JPY": 150, "BRL": 5][currency, default: 1]
            let price = unitPrice * Int64(quantity)
            var order = GoogleOrderRecord(
                orderId: String(
                    format: "GPA.33%02d-%04d-%04d-%05d", index / 1_000_000_000 % 100, index / 100_000 % 10_000, index / 10 % 10_000,
                    index * 7 % 100_000),
                packageName: packageName, purchaseToken: Self.token(&random), productId: product.id, quantity: quantity, priceMilli: price,
                currency: currency, purchaseTime: bought)
            let roll = Double.random(in: 0..<1, using: &random)
            let refundedAt = min(end, bought + Double.random(in: 3_600...(20 * 86_400), using: &random))
            // Google records a void a little after it happens; the feed filters on that.
            let recordedAt = min(end, refundedAt + Double.random(in: 60...7_200, using: &random))
            let source = Int32.random(in: 0...2, using: &random)
            if roll < refundRate * 0.7 {
                let chargeback = roll < refundRate * 0.2
                order.state = "REFUNDED"
                order.refund = .init(date: refundedAt, reason: chargeback ? "CHARGEBACK" : "OTHER", amountMilli: price)
                // A developer's refund without revoking is not in the feed (a tenth of the refunds here).
                if Double.random(in: 0..<1, using: &random) >= 0.1 {
                    let reason: Int32 = chargeback ? 7 : [0, 1, 2, 3, 4, 5, 6][Int.random(in: 0..<7, using: &random)]
                    order.voids = [.init(recordedAt: recordedAt, voidedAt: refundedAt, source: source, reason: reason)]
                }
            } else if roll < refundRate {
                // A partial refund: by quantity (its own feed row) when there are units to split, else by amount.
                order.state = "PARTIALLY_REFUNDED"
                let units = quantity / 2
                order.partialRefunds = [
                    .init(date: refundedAt, amountMilli: units > 0 ? unitPrice * Int64(units) : half(price, currency), processed: true)
                ]
                if units > 0 {
                    order.voids = [.init(recordedAt: recordedAt, voidedAt: refundedAt, source: source, reason: 1, quantity: Int32(units))]
                }
            } else if roll < refundRate + 0.002 {
                order.state = "CANCELED"
            } else if roll < refundRate + 0.004 {
                order.state = "PENDING_REFUND"
            }
            orders.append(order)
        }
        let grants = orders.enumerated().flatMap { index, order -> [GoogleGrantLine] in
            var granted = [grant(order, player: index % 800, random: &random)]
            if Double.random(in: 0..<1, using: &random) < unknownShare {
                // A grant for an order Google never had: a forged purchase the game accepted.
                var forged = order
                forged.orderId = "GPA.3399-0000-0000-\(String(format: "%05d", index % 100_000))"
                forged.purchaseToken = Self.token(&random)
                granted.append(grant(forged, player: (index * 7) % 800, random: &random))
            }
            return granted
        }
        // A few processed orders charged back and under the developer's review, notified in the day before
        // `now` (so within Google's 24 hours). Their own generator, so that the orders and grants stay what
        // this seed always gave.
        var reviews = SeededGenerator(seed: seed ^ 0x2E71_E700)
        for index in orders.indices where orders[index].state == "PROCESSED" && orders[index].purchaseTime < now - 86_400 {
            guard Double.random(in: 0..<1, using: &reviews) < refundRate * 0.05 else { continue }
            orders[index].refundReview = .init(
                pendingRefundToken: "prt-" + Self.token(&reviews), notifiedAt: now - Double.random(in: 600...(20 * 3_600), using: &reviews))
        }
        let keyFile = ServiceAccountKey.json(
            clientEmail: account, privateKeyPEM: key.pkcs8PEMRepresentation, privateKeyID: "simulated-key-1",
            tokenURI: tokenBaseURL + GooglePlaySimulator.tokenPath)
        let subscription = GoogleSubscriptionRecord(name: subscriptionName, topic: notificationTopic, subscribers: [account], ackDeadlineSeconds: 60)
        return Output(world: GooglePlayWorld(packages: [package], orders: orders, subscriptions: [subscription]), keyFile: keyFile, grants: grants)
    }

    /// The game's grant of `order`: its gems, the price the game saw for some, an account id for most.
    static func grant(_ order: GoogleOrderRecord, player: Int, random: inout SeededGenerator) -> GoogleGrantLine {
        let withPrice = Bool.random(using: &random)
        return GoogleGrantLine(
            transaction_id: order.purchaseToken, order_id: order.orderId, bundle_id: order.packageName, product_id: order.productId,
            player_id: "gplayer-\(player)", obfuscated_account_id: player % 5 == 0 ? nil : "acct-\(player * 7919 % 100_003)",
            quantity: order.quantity, units_granted: units(order.productId) * Int64(order.quantity),
            price_milli: withPrice ? order.priceMilli : nil, currency: withPrice ? order.currency : nil, purchased_at: order.purchaseTime)
    }

    /// A purchase token as Google's look: a long opaque string of letters, digits and a few punctuation marks.
    static func token(_ random: inout SeededGenerator) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        return String((0..<64).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
    }
}
