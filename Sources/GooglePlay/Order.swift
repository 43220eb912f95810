public import Foundation

/// Google's `Order` (Android Publisher v3, `schemas.Order`), the fields clawback reads: which purchase it is
/// (`orderId`, `purchaseToken`, what was bought) and what happened to its money (`state`, `orderHistory`).
/// Every field is optional as Google's contract has it; `OrderStatement` decides what an order says.
public struct Order: Sendable, Codable, Equatable {
    public var orderId: String?
    public var purchaseToken: String?
    /// PENDING, PROCESSED, CANCELED, PENDING_REFUND, PARTIALLY_REFUNDED, REFUNDED (or a value Google adds).
    public var state: String?
    public var createTime: String?
    public var lastEventTime: String?
    public var lineItems: [LineItem]?
    public var total: Money?
    public var orderHistory: OrderHistory?

    public init(
        orderId: String?, purchaseToken: String?, state: String?, createTime: String? = nil, lastEventTime: String? = nil,
        lineItems: [LineItem]? = nil, total: Money? = nil, orderHistory: OrderHistory? = nil
    ) {
        self.orderId = orderId
        self.purchaseToken = purchaseToken
        self.state = state
        self.createTime = createTime
        self.lastEventTime = lastEventTime
        self.lineItems = lineItems
        self.total = total
        self.orderHistory = orderHistory
    }

    public struct LineItem: Sendable, Codable, Equatable {
        public var productId: String?
        public var total: Money?
        public var oneTimePurchaseDetails: OneTimePurchaseDetails?

        public init(productId: String?, total: Money? = nil, quantity: Int?) {
            self.productId = productId
            self.total = total
            oneTimePurchaseDetails = quantity.map { OneTimePurchaseDetails(quantity: $0) }
        }
    }

    public struct OneTimePurchaseDetails: Sendable, Codable, Equatable {
        public var quantity: Int?
    }

    public struct OrderHistory: Sendable, Codable, Equatable {
        public var processedEvent: Event?
        public var cancellationEvent: Event?
        public var refundEvent: RefundEvent?
        public var partialRefundEvents: [PartialRefundEvent]?

        public init(
            processedEvent: Event? = nil, cancellationEvent: Event? = nil, refundEvent: RefundEvent? = nil,
            partialRefundEvents: [PartialRefundEvent]? = nil
        ) {
            self.processedEvent = processedEvent
            self.cancellationEvent = cancellationEvent
            self.refundEvent = refundEvent
            self.partialRefundEvents = partialRefundEvents
        }
    }

    public struct Event: Sendable, Codable, Equatable {
        public var eventTime: String?
        public init(eventTime: String?) { self.eventTime = eventTime }
    }

    public struct RefundEvent: Sendable, Codable, Equatable {
        public var eventTime: String?
        /// OTHER or CHARGEBACK.
        public var refundReason: String?
        public var refundDetails: RefundDetails?

        public init(eventTime: String?, refundReason: String?, refundDetails: RefundDetails?) {
            self.eventTime = eventTime
            self.refundReason = refundReason
            self.refundDetails = refundDetails
        }
    }

    public struct PartialRefundEvent: Sendable, Codable, Equatable {
        public var createTime: String?
        public var processTime: String?
        /// PENDING or PROCESSED_SUCCESSFULLY.
        public var state: String?
        public var refundDetails: RefundDetails?

        public init(createTime: String?, processTime: String?, state: String?, refundDetails: RefundDetails?) {
            self.createTime = createTime
            self.processTime = processTime
            self.state = state
            self.refundDetails = refundDetails
        }
    }

    public struct RefundDetails: Sendable, Codable, Equatable {
        public var total: Money?
        public var tax: Money?
        public init(total: Money?, tax: Money? = nil) {
            self.total = total
            self.tax = tax
        }
    }
}

/// Google's `Money`: `units` (an int64 written as a JSON string) plus `nanos` (10^-9 units, same sign).
public struct Money: Sendable, Codable, Equatable {
    public var currencyCode: String?
    public var units: String?
    public var nanos: Int32?

    public init(currencyCode: String?, units: String?, nanos: Int32?) {
        self.currencyCode = currencyCode
        self.units = units
        self.nanos = nanos
    }

    /// The amount in thousandths of the currency's unit (clawback's money everywhere), when Google's
    /// fields are well formed: units an integer, nanos within ±999,999,999 and never of the other sign,
    /// and no fraction finer than a thousandth. Nil otherwise: an amount is never guessed.
    public var milli: Int64? {
        guard let units = Int64(units ?? "0") else { return nil }
        let nanos = Int64(self.nanos ?? 0)
        guard abs(nanos) <= 999_999_999, !(units > 0 && nanos < 0), !(units < 0 && nanos > 0), nanos % 1_000_000 == 0 else { return nil }
        let (scaled, overflow) = units.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return nil }
        let (sum, overflow2) = scaled.addingReportingOverflow(nanos / 1_000_000)
        return overflow2 ? nil : sum
    }
}

extension Order {
    /// `createTime` read (RFC 3339 in UTC, as Google writes it), or nil.
    public var createdAt: Date? { createTime.flatMap(OrderStatement.date) }
}
