public import Crypto
public import Foundation

/// SplitMix64: a small, fast, seedable generator (the same one swift-argument-parser's examples use).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// A grant as the game's grant path would have recorded it: one line of the grants file
/// (`clawback grants import` format, snake_case like the table's columns).
// swift-format-ignore: AlwaysUseLowerCamelCase
// The properties are the grants table's column names, so that the synthesized Codable writes them as they are.
public struct GeneratedGrant: Sendable, Codable, Equatable {
    public var transaction_id: String
    public var original_transaction_id: String
    public var bundle_id: String
    public var product_id: String
    public var environment: String
    public var player_id: String
    public var app_account_token: String?
    public var quantity: Int32
    public var units_granted: Int64
    public var price_milli: Int64?
    public var currency: String?
    public var storefront: String?
    public var purchased_at: Date

    public init(
        transaction_id: String, original_transaction_id: String, bundle_id: String, product_id: String, environment: String,
        player_id: String, app_account_token: String?, quantity: Int32, units_granted: Int64, price_milli: Int64?, currency: String?,
        storefront: String?, purchased_at: Date
    ) {
        self.transaction_id = transaction_id
        self.original_transaction_id = original_transaction_id
        self.bundle_id = bundle_id
        self.product_id = product_id
        self.environment = environment
        self.player_id = player_id
        self.app_account_token = app_account_token
        self.quantity = quantity
        self.units_granted = units_granted
        self.price_milli = price_milli
        self.currency = currency
        self.storefront = storefront
        self.purchased_at = purchased_at
    }
}

/// Makes a world (and the grants a game would have for it) of any size, reproducibly under a seed:
/// purchases spread over a window, a share refunded (some prorated, some later reversed), and grants the
/// game has but Apple does not know, or that disagree with Apple.
public struct WorldGenerator {
    public struct Options: Sendable {
        public var purchases = 3000
        public var bundleIDs = ["com.example.clawback.game"]
        /// Purchases fall in [start, end).
        public var start: Date
        public var end: Date
        /// Refunds and reversals happen no later than this.
        public var now: Date
        public var refundRate = 0.03
        /// Of refunds: the share prorated (REFUND_PRORATED), and the share reversed later.
        public var proratedShare = 0.3
        public var reversalShare = 0.1
        /// Of refunds: the share that are Family Sharing revocations (FAMILY_REVOKE).
        public var familyRevokeShare = 0.0
        /// Of grants: the share Apple does not know, and the share that disagree with Apple.
        public var unknownShare = 0.003
        public var mismatchShare = 0.002
        /// Of purchases: the share made in the sandbox.
        public var sandboxShare = 0.0
        /// Of refunds: the share the customer asked for through a refund request (CONSUMPTION_REQUEST first).
        public var refundRequestShare = 0.0
        /// Of decided refund requests: the share Apple declined (REFUND_DECLINED, no refund).
        public var declinedRequestShare = 0.0
        /// Refund requests still open at `now` (sent in the last 11 hours, undecided), on purchases without a refund.
        public var openRefundRequests = 0
        /// Of open refund requests: the share whose purchase the game never granted (no grant line).
        public var undeliveredShare = 0.0
        public var seed: UInt64 = 42

        public init(start: Date, end: Date, now: Date) {
            self.start = start
            self.end = end
            self.now = now
        }
    }

    /// An app of the generated world with the private key its JWTs are signed with.
    public struct GeneratedApp: Sendable {
        public var record: AppRecord
        public var keyID: String
        public var privateKey: P256.Signing.PrivateKey
    }

    public struct Output: Sendable {
        public var apps: [GeneratedApp]
        public var transactions: [TransactionRecord]
        public var grants: [GeneratedGrant]

        public var world: World { World(apps: apps.map(\.record), transactions: transactions) }
    }

    struct Product {
        let id: String
        let units: Int64
        let priceMilliUSD: Int64
    }

    static let products = [
        Product(id: "gems_100", units: 100, priceMilliUSD: 990), Product(id: "gems_600", units: 600, priceMilliUSD: 4990),
        Product(id: "gems_1500", units: 1500, priceMilliUSD: 9990), Product(id: "coins_250", units: 250, priceMilliUSD: 1990),
        Product(id: "gems_6500", units: 6500, priceMilliUSD: 49990),
    ]

    /// Storefront, currency, and the price of 1 USD in that currency's milliunits (rounded like a price tier).
    static let markets: [(storefront: String, currency: String, perUSD: Double, roundTo: Int64)] = [
        ("USA", "USD", 1, 10), ("USA", "USD", 1, 10), ("GBR", "GBP", 0.8, 10), ("DEU", "EUR", 0.93, 10),
        ("JPN", "JPY", 150, 1000), ("BHR", "BHD", 0.376, 1), ("CAN", "CAD", 1.36, 10),
    ]

    public static func generate(_ options: Options) -> Output {
        var random = SeededGenerator(seed: options.seed)
        let apps = options.bundleIDs.enumerated().map { index, bundle in makeApp(bundle, index: index, random: &random) }
        let playerCount = max(1, options.purchases / 3)
        var transactions: [TransactionRecord] = []
        var grants: [GeneratedGrant] = []
        transactions.reserveCapacity(options.purchases)
        grants.reserveCapacity(options.purchases)
        let span = options.end.timeIntervalSince(options.start)

        for index in 0..<options.purchases {
            let bundle = options.bundleIDs[index % options.bundleIDs.count]
            let player = Int.random(in: 0..<playerCount, using: &random)
            let product = products[Int.random(in: 0..<products.count, using: &random)]
            let market = markets[Int.random(in: 0..<markets.count, using: &random)]
            let quantity: Int32 = Double.random(in: 0..<1, using: &random) < 0.9 ? 1 : Int32.random(in: 2...5, using: &random)
            let unitPrice = (Double(product.priceMilliUSD) * market.perUSD / Double(market.roundTo)).rounded() * Double(market.roundTo)
            let price = Int64(unitPrice) * Int64(quantity)
            let purchased = Date(timeIntervalSince1970: (options.start.timeIntervalSince1970 + Double.random(in: 0..<span, using: &random)).rounded())
            let environment = Double.random(in: 0..<1, using: &random) < options.sandboxShare ? "Sandbox" : "Production"
            let id = String(2_000_000_000_000_000 + Int64(index) * 7 + 1)
            let token = player % 2 == 0 ? uuid(seed: options.seed, player: player) : nil
            var record = TransactionRecord(
                transactionId: id, customerId: "customer-\(player)", bundleId: bundle, productId: product.id, quantity: quantity,
                priceMilli: price, currency: market.currency, storefront: market.storefront, environment: environment,
                purchaseDate: purchased, appAccountToken: token)
            if Double.random(in: 0..<1, using: &random) < options.refundRate {
                record.refund = refund(after: purchased, options: options, random: &random)
            }
            var grant = GeneratedGrant(
                transaction_id: id, original_transaction_id: id, bundle_id: bundle, product_id: product.id,
                environment: environment, player_id: "player-\(player)", app_account_token: token, quantity: quantity,
                units_granted: product.units * Int64(quantity), price_milli: price, currency: market.currency,
                storefront: market.storefront, purchased_at: purchased)
            let fate = Double.random(in: 0..<1, using: &random)
            if fate < options.unknownShare {
                // A grant Apple never saw (a forged or mistaken grant): the world does not get the transaction.
                grant.transaction_id = String(3_000_000_000_000_000 + Int64(index))
                grant.original_transaction_id = grant.transaction_id
                grants.append(grant)
                continue
            }
            if fate < options.unknownShare + options.mismatchShare {
                // The game credited something other than what Apple sold.
                grant.product_id = "gems_6500"
                grant.units_granted = 6500 * Int64(quantity)
                if record.productId == "gems_6500" { grant.quantity = quantity + 1 }
            }
            transactions.append(record)
            grants.append(grant)
        }
        addRefundRequests(options, transactions: &transactions, grants: &grants)
        return Output(apps: apps, transactions: transactions, grants: grants)
    }

    static let requestReasons = ["UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER"]

    /// Refund requests, drawn from a generator of their own so that worlds without them stay as they were:
    /// requests that led to a refund, requests Apple declined, and requests still open.
    static func addRefundRequests(_ options: Options, transactions: inout [TransactionRecord], grants: inout [GeneratedGrant]) {
        guard options.refundRequestShare > 0 || options.openRefundRequests > 0 else { return }
        var random = SeededGenerator(seed: options.seed ^ 0x5245_4655_4E44)
        let delay = RefundDecisions.decisionDelay
        func reason() -> String { requestReasons[Int.random(in: 0..<requestReasons.count, using: &random)] }
        let declineOdds = options.declinedRequestShare >= 1 ? 1 : options.declinedRequestShare / (1 - options.declinedRequestShare)
        var free: [Int] = []
        for index in transactions.indices {
            let record = transactions[index]
            if let refund = record.refund {
                guard Double.random(in: 0..<1, using: &random) < options.refundRequestShare else { continue }
                let asked = max(record.purchaseDate + 60, refund.date - delay)
                transactions[index].refundRequest = RefundRequestRecord(date: asked, reason: reason(), decision: "REFUND", decidedAt: refund.date)
            } else if Double.random(in: 0..<1, using: &random) < options.refundRate * options.refundRequestShare * declineOdds {
                let latest = options.now.timeIntervalSince1970 - delay - 3600
                let earliest = record.purchaseDate.timeIntervalSince1970 + 3600
                guard latest > earliest else { continue }
                let asked = Date(timeIntervalSince1970: (earliest + Double.random(in: 0..<1, using: &random) * (latest - earliest)).rounded())
                transactions[index].refundRequest = RefundRequestRecord(
                    date: asked, reason: reason(), decision: "REFUND_DECLINED", decidedAt: asked + delay)
            } else if record.purchaseDate < options.now - 3600 {
                free.append(index)
            }
        }
        free.shuffle(using: &random)
        var ungranted: Set<String> = []
        for index in free.prefix(options.openRefundRequests) {
            let purchased = transactions[index].purchaseDate.timeIntervalSince1970
            let earliest = max(purchased + 60, options.now.timeIntervalSince1970 - 11 * 3600)
            let latest = options.now.timeIntervalSince1970 - 60
            let asked = Date(timeIntervalSince1970: (earliest + Double.random(in: 0..<1, using: &random) * max(0, latest - earliest)).rounded())
            transactions[index].refundRequest = RefundRequestRecord(date: asked, reason: reason())
            if Double.random(in: 0..<1, using: &random) < options.undeliveredShare { ungranted.insert(transactions[index].transactionId) }
        }
        if !ungranted.isEmpty { grants.removeAll { ungranted.contains($0.transaction_id) } }
    }

    static func refund(after purchased: Date, options: Options, random: inout SeededGenerator) -> RefundRecord? {
        let latest = options.now.timeIntervalSince1970 - 60
        let earliest = purchased.timeIntervalSince1970 + 3600
        guard latest > earliest else { return nil }
        let date = Date(timeIntervalSince1970: (earliest + Double.random(in: 0..<1, using: &random) * min(latest - earliest, 45 * 86_400)).rounded())
        var refund = RefundRecord(date: date, reason: Int32.random(in: 0...1, using: &random))
        let kind = Double.random(in: 0..<1, using: &random)
        if kind < options.proratedShare {
            refund.type = "REFUND_PRORATED"
            refund.percentage = Int32.random(in: 10...90, using: &random) * 1000 + Int32.random(in: 0...999, using: &random)
        } else if kind < options.proratedShare + options.familyRevokeShare {
            refund.type = "FAMILY_REVOKE"
            refund.reason = 0
        }
        if Double.random(in: 0..<1, using: &random) < options.reversalShare {
            let reversed = date.timeIntervalSince1970 + Double.random(in: 86_400...(10 * 86_400), using: &random)
            if reversed < latest { refund.reversedDate = Date(timeIntervalSince1970: reversed.rounded()) }
        }
        return refund
    }

    static func makeApp(_ bundle: String, index: Int, random: inout SeededGenerator) -> GeneratedApp {
        var key: P256.Signing.PrivateKey?
        while key == nil {
            let bytes = (0..<4).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
            key = try? P256.Signing.PrivateKey(rawRepresentation: bytes)
        }
        let privateKey = key ?? P256.Signing.PrivateKey()
        let keyID = String(format: "SIMKEY%04d", index + 1)
        let issuer = uuid(seed: random.next(), player: index)
        let record = AppRecord(
            bundleId: bundle, appAppleId: 6_450_000_000 + Int64(index) + 1, issuerId: issuer,
            keys: [AppRecord.Key(keyId: keyID, publicKey: privateKey.publicKey.pemRepresentation)])
        return GeneratedApp(record: record, keyID: keyID, privateKey: privateKey)
    }

    static func uuid(seed: UInt64, player: Int) -> String {
        var generator = SeededGenerator(seed: seed &+ UInt64(player) &* 0x9E37_79B9)
        let a = generator.next()
        let b = generator.next()
        let hex = String(format: "%016llx%016llx", a, b)
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }
}
