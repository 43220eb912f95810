public import Foundation

/// `deliveryStatus` of a consumption answer: whether the app delivered a working purchase.
public struct DeliveryStatus: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let delivered = Self(rawValue: "DELIVERED")
    public static let undeliveredQualityIssue = Self(rawValue: "UNDELIVERED_QUALITY_ISSUE")
    public static let undeliveredWrongItem = Self(rawValue: "UNDELIVERED_WRONG_ITEM")
    public static let undeliveredServerOutage = Self(rawValue: "UNDELIVERED_SERVER_OUTAGE")
    public static let undeliveredOther = Self(rawValue: "UNDELIVERED_OTHER")

    public static let known: [Self] = [.delivered, .undeliveredQualityIssue, .undeliveredWrongItem, .undeliveredServerOutage, .undeliveredOther]
}

/// `refundPreference` of a consumption answer: the outcome the developer prefers.
public struct RefundPreference: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let decline = Self(rawValue: "DECLINE")
    public static let grantFull = Self(rawValue: "GRANT_FULL")
    public static let grantProrated = Self(rawValue: "GRANT_PRORATED")

    public static let known: [Self] = [.decline, .grantFull, .grantProrated]
}

/// `consumptionRequestReason` of a CONSUMPTION_REQUEST notification: why the customer asked for a refund.
public struct ConsumptionRequestReason: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let unintendedPurchase = Self(rawValue: "UNINTENDED_PURCHASE")
    public static let fulfillmentIssue = Self(rawValue: "FULFILLMENT_ISSUE")
    public static let unsatisfiedWithPurchase = Self(rawValue: "UNSATISFIED_WITH_PURCHASE")
    public static let legal = Self(rawValue: "LEGAL")
    public static let other = Self(rawValue: "OTHER")
}

/// The body of Send Consumption Information (v2, `ConsumptionRequest`): what the developer tells Apple
/// about a purchase whose refund a customer asked for. Optional fields left nil are left out of the JSON.
public struct ConsumptionRequest: Sendable, Codable, Equatable {
    /// Must be true: Apple refuses anything else (4000035), and a developer without the customer's
    /// consent must not answer at all.
    public var customerConsented: Bool
    /// The share consumed in milliunits of a percent (0 to 100000). Must be 0 (or absent) unless
    /// delivered; never for auto-renewable subscriptions.
    public var consumptionPercentage: Int32?
    public var deliveryStatus: DeliveryStatus
    public var refundPreference: RefundPreference?
    public var sampleContentProvided: Bool

    public init(
        customerConsented: Bool, consumptionPercentage: Int32?, deliveryStatus: DeliveryStatus, refundPreference: RefundPreference?,
        sampleContentProvided: Bool
    ) {
        self.customerConsented = customerConsented
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
    }

    /// The body as sent: JSON with sorted keys, so that the same answer is always the same bytes.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(self)
    }

    /// Apple's documented rules for the body (DOC: ConsumptionRequest, consumptionPercentage), checked
    /// before anything is sent, so that a wrong answer is never sent. `productType` is the purchase's, from
    /// its verified signed transaction.
    public func validate(productType: ProductType?) throws(ConsumptionRequestError) {
        guard customerConsented else { throw .customerNotConsented }
        guard DeliveryStatus.known.contains(deliveryStatus) else { throw .unknownDeliveryStatus(deliveryStatus.rawValue) }
        if let refundPreference, !RefundPreference.known.contains(refundPreference) {
            throw .unknownRefundPreference(refundPreference.rawValue)
        }
        if let percentage = consumptionPercentage {
            guard productType != .autoRenewable else { throw .percentageForAutoRenewable }
            guard (0...100_000).contains(percentage) else { throw .percentageOutOfRange(percentage) }
            guard deliveryStatus == .delivered || percentage == 0 else { throw .percentageWhenUndelivered(deliveryStatus.rawValue, percentage) }
        }
        // GRANT_PRORATED: Apple computes an auto-renewable's share itself (no percentage, checked above); for
        // every other product the consumptionPercentage page asks for one strictly between 0 and 100000 (the
        // refundPreference page says "may include": the stricter reading is kept, so nothing Apple may refuse
        // is sent).
        if refundPreference == .grantProrated && productType != .autoRenewable {
            guard let percentage = consumptionPercentage, percentage > 0, percentage < 100_000 else {
                throw .proratedWithoutPartialConsumption(consumptionPercentage)
            }
        }
    }
}

/// A consumption answer that breaks one of Apple's rules, caught before it was sent. Each case names the
/// rule and, where Apple documents one, the error Apple would have answered with.
public enum ConsumptionRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    case customerNotConsented
    case unknownDeliveryStatus(String)
    case unknownRefundPreference(String)
    case percentageForAutoRenewable
    case percentageOutOfRange(Int32)
    case percentageWhenUndelivered(String, Int32)
    case proratedWithoutPartialConsumption(Int32?)

    public var description: String {
        switch self {
        case .customerNotConsented:
            "customerConsented must be true (Apple: 4000035 InvalidCustomerConsentedError); without consent no answer is sent"
        case .unknownDeliveryStatus(let value): "deliveryStatus \(value) is not one of Apple's values (4000036 InvalidDeliveryStatusError)"
        case .unknownRefundPreference(let value): "refundPreference \(value) is not one of Apple's values (4000044 InvalidRefundPreferenceError)"
        case .percentageForAutoRenewable:
            "consumptionPercentage is not allowed for auto-renewable subscriptions (4000209 ConsumptionPercentageAutoRenewableSubscriptionError)"
        case .percentageOutOfRange(let value):
            "consumptionPercentage \(value) is outside 0...100000 milliunits (ConsumptionPercentageOutOfRangeError)"
        case .percentageWhenUndelivered(let status, let value):
            "consumptionPercentage must be 0 when deliveryStatus is \(status), not \(value) (UndeliveredConsumptionPercentageNonZeroError)"
        case .proratedWithoutPartialConsumption(let value):
            "GRANT_PRORATED needs a consumptionPercentage greater than 0 and less than 100000, not \(value.map(String.init) ?? "none")"
        }
    }
}

/// Why a consumption answer was not accepted: refused here before sending, or by Apple (or never reached it).
public enum ConsumptionAnswerError: Error, Sendable, CustomStringConvertible {
    /// The body broke one of Apple's rules; nothing was sent.
    case invalidLocally(ConsumptionRequestError)
    /// The body could not be encoded as JSON; nothing was sent.
    case unencodable
    /// Sent (perhaps more than once, with retries), and Apple refused it or never answered.
    case apple(AppStoreAPIError)

    public var description: String {
        switch self {
        case .invalidLocally(let error): "not sent: \(error)"
        case .unencodable: "not sent: the answer could not be encoded as JSON"
        case .apple(let error): "\(error)"
        }
    }
}
