public import Foundation

/// A real-time developer notification (RTDN) as Google publishes it to the app's Pub/Sub topic: the `data`
/// of a Pub/Sub message, base64-decoded, is this JSON (developer.android.com/google/play/billing/rtdn-reference).
/// Exactly one of the notification fields is present.
public struct DeveloperNotification: Sendable, Equatable, Codable {
    public var version: String?
    public var packageName: String?
    /// Google documents a long and shows a string in its example: both are read; written as a string.
    public var eventTimeMillis: Millis?
    public var voidedPurchaseNotification: VoidedPurchaseNotification?
    public var pendingRefundReviewNotification: PendingRefundReviewNotification?
    public var testNotification: TestNotification?
    public var oneTimeProductNotification: OneTimeProductNotification?
    public var subscriptionNotification: SubscriptionNotification?

    public init(
        version: String? = "1.0", packageName: String?, eventTime: Date?, voidedPurchase: VoidedPurchaseNotification? = nil,
        pendingRefundReview: PendingRefundReviewNotification? = nil, test: TestNotification? = nil
    ) {
        self.version = version
        self.packageName = packageName
        eventTimeMillis = eventTime.map { Millis(Int64(($0.timeIntervalSince1970 * 1000).rounded())) }
        voidedPurchaseNotification = voidedPurchase
        pendingRefundReviewNotification = pendingRefundReview
        testNotification = test
    }

    /// A voided purchase: `productType` 1 subscription, 2 one-time; `refundType` 1 full, 2 a quantity-based
    /// partial refund (several may come for one purchase; the last of the quantity comes as a full refund).
    public struct VoidedPurchaseNotification: Sendable, Equatable, Codable {
        public var purchaseToken: String?
        public var orderId: String?
        public var productType: Int?
        public var refundType: Int?

        public init(purchaseToken: String?, orderId: String?, productType: Int? = 2, refundType: Int? = 1) {
            self.purchaseToken = purchaseToken
            self.orderId = orderId
            self.productType = productType
            self.refundType = refundType
        }
    }

    /// A chargeback Google asks the developer to review: answered with `orders.reviewrefund` and this
    /// token within 24 hours. Google's reference does not list its fields yet; these are the names Google's
    /// `orders.reviewrefund` request and independent clients use (`refundReason` 7 is a chargeback, as in
    /// the Voided Purchases API).
    public struct PendingRefundReviewNotification: Sendable, Equatable, Codable {
        public var version: String?
        public var pendingRefundToken: String?
        public var orderId: String?
        public var refundReason: Int?
        public var obfuscatedAccountId: String?
        public var obfuscatedProfileId: String?

        public init(
            version: String? = "1.0", pendingRefundToken: String?, orderId: String?, refundReason: Int? = 7, obfuscatedAccountId: String? = nil,
            obfuscatedProfileId: String? = nil
        ) {
            self.version = version
            self.pendingRefundToken = pendingRefundToken
            self.orderId = orderId
            self.refundReason = refundReason
            self.obfuscatedAccountId = obfuscatedAccountId
            self.obfuscatedProfileId = obfuscatedProfileId
        }
    }

    /// What the Play Console's "Send test notification" publishes.
    public struct TestNotification: Sendable, Equatable, Codable {
        public var version: String?

        public init(version: String? = "1.0") { self.version = version }
    }

    /// A one-time product purchased or a pending one canceled: not clawback's concern, kept as read.
    public struct OneTimeProductNotification: Sendable, Equatable, Codable {
        public var version: String?
        public var notificationType: Int?
        public var purchaseToken: String?
        public var sku: String?
    }

    /// A subscription's change: not clawback's concern (it re-checks consumables), kept as read.
    public struct SubscriptionNotification: Sendable, Equatable, Codable {
        public var version: String?
        public var notificationType: Int?
        public var purchaseToken: String?
    }

    /// Milliseconds since the epoch, read from a JSON number or a string of digits.
    public struct Millis: Sendable, Equatable, Codable {
        public var value: Int64

        public init(_ value: Int64) { self.value = value }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int64.self) {
                value = number
            } else if let text = try? container.decode(String.self), let number = Int64(text) {
                value = number
            } else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not milliseconds since the epoch")
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(String(value))
        }
    }
}

/// What a notification says, once read and checked: the app, when, and the one thing that happened.
public struct ReadNotification: Sendable, Equatable {
    public enum Content: Sendable, Equatable {
        /// A purchase voided (refunded, charged back, revoked): the order the next Google daily run checks.
        case voided(purchaseToken: String, orderID: String, productType: Int?, refundType: Int?)
        /// A chargeback to review and answer before `eventTime` + 24 hours.
        case refundReview(DeveloperNotification.PendingRefundReviewNotification, token: String, orderID: String)
        case test
        /// A notification clawback does not act on (a one-time purchase, a subscription): recorded as read.
        case notForClawback(kind: String)
    }

    public var packageName: String
    public var eventTime: Date
    public var content: Content
}

/// Why a Pub/Sub message is not a notification clawback can read: it is kept for a person, not acknowledged
/// into nothing.
public struct NotificationReadingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

extension DeveloperNotification {
    /// 9999-12-31T23:59:59.999Z: later times are no event's, and past PostgreSQL's and the formatters' years.
    static let latestEventTimeMillis: Int64 = 253_402_300_799_999

    /// The first text field clawback keeps that holds a NUL character, by its JSON path.
    var firstTextWithNUL: String? {
        let fields: [(String, String?)] = [
            ("packageName", packageName), ("voidedPurchaseNotification.purchaseToken", voidedPurchaseNotification?.purchaseToken),
            ("voidedPurchaseNotification.orderId", voidedPurchaseNotification?.orderId),
            ("pendingRefundReviewNotification.pendingRefundToken", pendingRefundReviewNotification?.pendingRefundToken),
            ("pendingRefundReviewNotification.orderId", pendingRefundReviewNotification?.orderId),
            ("pendingRefundReviewNotification.obfuscatedAccountId", pendingRefundReviewNotification?.obfuscatedAccountId),
            ("pendingRefundReviewNotification.obfuscatedProfileId", pendingRefundReviewNotification?.obfuscatedProfileId),
        ]
        return fields.first { $0.1?.utf8.contains(0) == true }?.0
    }

    /// The notification in a Pub/Sub message's decoded `data`, checked: JSON of this shape, a package name, an
    /// event time, and exactly one notification with what clawback needs of it.
    public static func read(_ data: [UInt8]) throws(NotificationReadingError) -> ReadNotification {
        let notification: DeveloperNotification
        do {
            notification = try JSONDecoder().decode(DeveloperNotification.self, from: Data(data))
        } catch {
            throw NotificationReadingError(description: "not a developer notification's JSON: \(error)")
        }
        guard let packageName = notification.packageName, !packageName.isEmpty else {
            throw NotificationReadingError(description: "no packageName")
        }
        guard let millis = notification.eventTimeMillis?.value, millis > 0 else {
            throw NotificationReadingError(description: "no eventTimeMillis")
        }
        guard millis <= Self.latestEventTimeMillis else {
            throw NotificationReadingError(description: "eventTimeMillis \(millis) is past the year 9999: not a time Google sends")
        }
        if let field = notification.firstTextWithNUL {
            throw NotificationReadingError(description: "\(field) holds a NUL character, which no Google identifier has")
        }
        let present: [(String, Bool)] = [
            ("voidedPurchaseNotification", notification.voidedPurchaseNotification != nil),
            ("pendingRefundReviewNotification", notification.pendingRefundReviewNotification != nil),
            ("testNotification", notification.testNotification != nil),
            ("oneTimeProductNotification", notification.oneTimeProductNotification != nil),
            ("subscriptionNotification", notification.subscriptionNotification != nil),
        ]
        let kinds = present.filter(\.1).map(\.0)
        guard kinds.count == 1 else {
            throw NotificationReadingError(
                description: kinds.isEmpty ? "no notification this version knows" : "several notifications in one: \(kinds.joined(separator: ", "))")
        }
        let eventTime = Date(timeIntervalSince1970: Double(millis) / 1000)
        let content: ReadNotification.Content
        if let voided = notification.voidedPurchaseNotification {
            guard let token = voided.purchaseToken, !token.isEmpty, let order = voided.orderId, !order.isEmpty else {
                throw NotificationReadingError(description: "a voidedPurchaseNotification without its purchaseToken and orderId")
            }
            content = .voided(purchaseToken: token, orderID: order, productType: voided.productType, refundType: voided.refundType)
        } else if let review = notification.pendingRefundReviewNotification {
            guard let token = review.pendingRefundToken, !token.isEmpty, let order = review.orderId, !order.isEmpty else {
                throw NotificationReadingError(description: "a pendingRefundReviewNotification without its pendingRefundToken and orderId")
            }
            if let reason = review.refundReason, Int32(exactly: reason) == nil {
                throw NotificationReadingError(
                    description: "pendingRefundReviewNotification.refundReason \(reason) is out of range: not a reason code")
            }
            content = .refundReview(review, token: token, orderID: order)
        } else if notification.testNotification != nil {
            content = .test
        } else {
            content = .notForClawback(kind: kinds[0])
        }
        return ReadNotification(packageName: packageName, eventTime: eventTime, content: content)
    }
}
