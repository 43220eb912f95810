public import Foundation
public import GooglePlay

/// What Google Play knows, for the simulator: apps (package names) with the service accounts allowed to
/// read them, and their orders with their refund story. Read from JSONL (`google-world.jsonl`): a line is
/// a package (`"record":"googlePackage"`), an order (`"record":"googleOrder"`) or a Pub/Sub subscription
/// (`"record":"googleSubscription"`).
public struct GooglePlayWorld: Sendable {
    public var packages: [String: GooglePackageRecord] = [:]
    public var orders: [String: GoogleOrderRecord] = [:]
    public var subscriptions: [String: GoogleSubscriptionRecord] = [:]

    public init(packages: [GooglePackageRecord] = [], orders: [GoogleOrderRecord] = [], subscriptions: [GoogleSubscriptionRecord] = []) {
        for package in packages { self.packages[package.packageName] = package }
        for order in orders { self.orders[order.orderId] = order }
        for subscription in subscriptions { self.subscriptions[subscription.name] = subscription }
    }

    /// Parses JSONL; blank lines and lines starting with # are skipped. Errors name the line.
    public static func parse(_ data: Data) throws -> GooglePlayWorld {
        var world = GooglePlayWorld()
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == 0x20 || $0 == 0x09 }
            guard let first = trimmed.first, first != UInt8(ascii: "#") else { continue }
            struct Kind: Decodable { var record: String? }
            do {
                switch try decoder.decode(Kind.self, from: Data(trimmed)).record {
                case "googlePackage":
                    let package = try decoder.decode(GooglePackageRecord.self, from: Data(trimmed))
                    world.packages[package.packageName] = package
                case "googleOrder":
                    let order = try decoder.decode(GoogleOrderRecord.self, from: Data(trimmed))
                    world.orders[order.orderId] = order
                case "googleSubscription":
                    let subscription = try decoder.decode(GoogleSubscriptionRecord.self, from: Data(trimmed))
                    world.subscriptions[subscription.name] = subscription
                case let other:
                    throw WorldFile.LineError(
                        line: index + 1, problem: "\"record\" is \(other ?? "missing"), not googlePackage, googleOrder or googleSubscription")
                }
            } catch let error as WorldFile.LineError {
                throw error
            } catch {
                throw WorldFile.LineError(line: index + 1, problem: "\(error)")
            }
        }
        return world
    }

    /// JSONL of this world, packages first, orders by id.
    public func encoded() throws -> Data {
        var out = Data()
        try eachLine { out += $0 + Data("\n".utf8) }
        return out
    }

    /// Writes the world as JSONL at `path`, a line at a time: a world of millions of orders is gigabytes, more
    /// than one write(2) takes (the file came out corrupt past 2 GiB when written whole).
    public func write(to path: String) throws {
        var file = try LineFileWriter(path: path)
        try eachLine { try file.appendLine($0) }
        try file.finish()
    }

    private func eachLine(_ body: (Data) throws -> Void) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        for package in packages.values.sorted(by: { $0.packageName < $1.packageName }) { try body(try encoder.encode(package)) }
        for order in orders.values.sorted(by: { $0.orderId < $1.orderId }) { try body(try encoder.encode(order)) }
        for subscription in subscriptions.values.sorted(by: { $0.name < $1.name }) { try body(try encoder.encode(subscription)) }
    }
}

/// An app on Google Play and the service accounts (by `client_email`) Google lets read its orders, each
/// with the PEM of its RSA public key.
public struct GooglePackageRecord: Sendable, Codable, Equatable {
    public var record = "googlePackage"
    public var packageName: String
    public var serviceAccounts: [String: String]
    /// The Cloud Pub/Sub topic the Play Console publishes this app's real-time developer notifications to
    /// (`projects/{project}/topics/{topic}`), if set up.
    public var notificationTopic: String?
    /// Service accounts of `serviceAccounts` that may read orders ("View financial data, orders, and
    /// cancellation survey responses") but not act on them ("Manage orders and subscriptions"): their
    /// `orders.reviewrefund` is refused 401 `permissionDenied`. Absent from older world files: none.
    public var viewOnlyAccounts: [String]?

    public init(packageName: String, serviceAccounts: [String: String], notificationTopic: String? = nil) {
        self.packageName = packageName
        self.serviceAccounts = serviceAccounts
        self.notificationTopic = notificationTopic
    }
}

/// A Cloud Pub/Sub pull subscription (`projects/{project}/subscriptions/{name}`) on a topic, the service
/// accounts (by `client_email`) holding the Pub/Sub Subscriber role on it, and its acknowledgement deadline.
public struct GoogleSubscriptionRecord: Sendable, Codable, Equatable {
    public var record = "googleSubscription"
    public var name: String
    public var topic: String
    public var subscribers: [String]
    /// Pub/Sub's default is 10 seconds; at most 600.
    public var ackDeadlineSeconds: Int?

    public init(name: String, topic: String, subscribers: [String], ackDeadlineSeconds: Int? = nil) {
        self.name = name
        self.topic = topic
        self.subscribers = subscribers
        self.ackDeadlineSeconds = ackDeadlineSeconds
    }
}

/// A one-time purchase as Google knows it, with its refund story.
public struct GoogleOrderRecord: Sendable, Codable, Equatable {
    public var record = "googleOrder"
    public var orderId: String
    public var packageName: String
    public var purchaseToken: String
    public var productId: String
    public var quantity: Int
    public var priceMilli: Int64
    public var currency: String
    public var purchaseTime: Date
    /// Google's `Order.state`: PROCESSED, REFUNDED, PARTIALLY_REFUNDED, CANCELED, PENDING, PENDING_REFUND.
    public var state: String
    public var refund: Refund?
    public var partialRefunds: [PartialRefund]?
    /// The rows the Voided Purchases feed lists for this order (none for a refund made without revoking).
    public var voids: [Void]?
    /// A chargeback Google asks the developer to review (`pendingRefundReviewNotification`), if any.
    public var refundReview: RefundReview?

    /// A chargeback under the developer's review: the token Google's notification carried, when Google
    /// notified (the 24-hour window to answer starts then), and the bank's reason (7, chargeback).
    public struct RefundReview: Sendable, Codable, Equatable {
        public var pendingRefundToken: String
        public var notifiedAt: Date
        public var refundReason: Int32

        public init(pendingRefundToken: String, notifiedAt: Date, refundReason: Int32 = 7) {
            self.pendingRefundToken = pendingRefundToken
            self.notifiedAt = notifiedAt
            self.refundReason = refundReason
        }
    }

    /// A row of the Voided Purchases feed: when Google's systems recorded it (what the feed filters on),
    /// when the purchase was voided, by whom, why, and for a quantity-based partial refund how many units.
    public struct Void: Sendable, Codable, Equatable {
        public var recordedAt: Date
        public var voidedAt: Date
        public var source: Int32
        public var reason: Int32
        public var quantity: Int32?

        public init(recordedAt: Date, voidedAt: Date, source: Int32, reason: Int32, quantity: Int32? = nil) {
            self.recordedAt = recordedAt
            self.voidedAt = voidedAt
            self.source = source
            self.reason = reason
            self.quantity = quantity
        }
    }

    public struct Refund: Sendable, Codable, Equatable {
        public var date: Date
        /// OTHER or CHARGEBACK.
        public var reason: String
        public var amountMilli: Int64

        public init(date: Date, reason: String, amountMilli: Int64) {
            self.date = date
            self.reason = reason
            self.amountMilli = amountMilli
        }
    }

    public struct PartialRefund: Sendable, Codable, Equatable {
        public var date: Date
        public var amountMilli: Int64
        public var processed: Bool

        public init(date: Date, amountMilli: Int64, processed: Bool) {
            self.date = date
            self.amountMilli = amountMilli
            self.processed = processed
        }
    }

    public init(
        orderId: String, packageName: String, purchaseToken: String, productId: String, quantity: Int, priceMilli: Int64, currency: String,
        purchaseTime: Date, state: String = "PROCESSED", refund: Refund? = nil, partialRefunds: [PartialRefund]? = nil, voids: [Void]? = nil
    ) {
        self.orderId = orderId
        self.packageName = packageName
        self.purchaseToken = purchaseToken
        self.productId = productId
        self.quantity = quantity
        self.priceMilli = priceMilli
        self.currency = currency
        self.purchaseTime = purchaseTime
        self.state = state
        self.refund = refund
        self.partialRefunds = partialRefunds
        self.voids = voids
    }

    /// The order as Google's Orders API returns it.
    public var order: Order {
        // Google's JSON leaves out a zero field (proto3): no `units` under one unit, no `nanos` for a whole amount.
        func money(_ milli: Int64) -> Money {
            let nanos = Int32((milli % 1000) * 1_000_000)
            return Money(currencyCode: currency, units: milli / 1000 == 0 ? nil : String(milli / 1000), nanos: nanos == 0 ? nil : nanos)
        }
        let processed = Order.Event(eventTime: Self.time(purchaseTime))
        let lastEvent = ([purchaseTime, refund?.date] + (partialRefunds ?? []).map(\.date)).compactMap { $0 }.max() ?? purchaseTime
        return Order(
            orderId: orderId, purchaseToken: purchaseToken, state: state, createTime: Self.time(purchaseTime),
            lastEventTime: Self.time(lastEvent),
            lineItems: [Order.LineItem(productId: productId, total: money(priceMilli), quantity: quantity)], total: money(priceMilli),
            orderHistory: Order.OrderHistory(
                processedEvent: state == "CANCELED" || state == "PENDING" ? nil : processed,
                cancellationEvent: state == "CANCELED" ? processed : nil,
                refundEvent: refund.map {
                    Order.RefundEvent(eventTime: Self.time($0.date), refundReason: $0.reason, refundDetails: .init(total: money($0.amountMilli)))
                },
                partialRefundEvents: partialRefunds.map { events in
                    events.map {
                        Order.PartialRefundEvent(
                            createTime: Self.time($0.date), processTime: $0.processed ? Self.time($0.date) : nil,
                            state: $0.processed ? "PROCESSED_SUCCESSFULLY" : "PENDING", refundDetails: .init(total: money($0.amountMilli)))
                    }
                }))
    }

    /// RFC 3339, Z-normalized, with milliseconds (Google writes 0, 3, 6 or 9 fractional digits).
    static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }
}
