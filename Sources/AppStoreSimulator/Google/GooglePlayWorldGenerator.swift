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
    }

    public static let packageName = "com.studio.game"
    public static let account = "clawback@studio-project.iam.gserviceaccount.com"

    public static func generate(
        orders count: Int, start: Date, end: Date, refundRate: Double = 0.03, seed: UInt64 = 7,
        tokenBaseURL: String = "http://127.0.0.1:8080"
    ) throws -> Output {
        var random = SeededGenerator(seed: seed ^ 0x6006_1E00)
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let package = GooglePackageRecord(packageName: packageName, serviceAccounts: [account: key.publicKey.pemRepresentation])
        let products: [(id: String, priceMilli: Int64)] = [("gems_100", 990), ("gems_600", 4_990), ("gems_1500", 9_990)]
        var orders: [GoogleOrderRecord] = []
        orders.reserveCapacity(count)
        for index in 0..<count {
            let product = products[Int.random(in: 0..<products.count, using: &random)]
            let bought = start + Double.random(in: 0..<(end.timeIntervalSince(start)), using: &random)
            let quantity = Double.random(in: 0..<1, using: &random) < 0.1 ? Int.random(in: 2...5, using: &random) : 1
            let price = product.priceMilli * Int64(quantity)
            var order = GoogleOrderRecord(
                orderId: String(
                    format: "GPA.33%02d-%04d-%04d-%05d", index / 1_000_000_000 % 100, index / 100_000 % 10_000, index / 10 % 10_000,
                    index * 7 % 100_000),
                packageName: packageName, purchaseToken: Self.token(&random), productId: product.id, quantity: quantity, priceMilli: price,
                currency: ["EUR", "USD", "JPY", "BRL"][index % 4], purchaseTime: bought)
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
                    .init(date: refundedAt, amountMilli: units > 0 ? product.priceMilli * Int64(units) : price / 2, processed: true)
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
        let keyFile = ServiceAccountKey.json(
            clientEmail: account, privateKeyPEM: key.pkcs8PEMRepresentation, privateKeyID: "simulated-key-1",
            tokenURI: tokenBaseURL + GooglePlaySimulator.tokenPath)
        return Output(world: GooglePlayWorld(packages: [package], orders: orders), keyFile: keyFile)
    }

    /// A purchase token as Google's look: a long opaque string of letters, digits and a few punctuation marks.
    static func token(_ random: inout SeededGenerator) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        return String((0..<64).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
    }
}
