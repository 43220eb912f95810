/// An Apple enumeration kept as Apple's raw string, with the known values as constants. A value Apple adds
/// later decodes as itself instead of failing the whole payload; code that decides compares with the
/// constants and treats anything else as unknown.
public protocol AppleStringEnum: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible
where RawValue == String {
    init(rawValue: String)
}

extension AppleStringEnum {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// `environment`: where the transaction happened.
public struct AppStoreEnvironment: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let production = Self(rawValue: "Production")
    public static let sandbox = Self(rawValue: "Sandbox")
    /// StoreKit testing in Xcode: never signed by the App Store.
    public static let xcode = Self(rawValue: "Xcode")
    /// Apple's libraries' placeholder for local tests.
    public static let localTesting = Self(rawValue: "LocalTesting")
}

/// `revocationType` (App Store Server API 1.19+).
public struct RevocationType: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let refundFull = Self(rawValue: "REFUND_FULL")
    public static let refundProrated = Self(rawValue: "REFUND_PRORATED")
    public static let familyRevoke = Self(rawValue: "FAMILY_REVOKE")
}

/// `type` of the product (note: the history endpoint's filter spells these differently, e.g. CONSUMABLE).
public struct ProductType: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let consumable = Self(rawValue: "Consumable")
    public static let nonConsumable = Self(rawValue: "Non-Consumable")
    public static let autoRenewable = Self(rawValue: "Auto-Renewable Subscription")
    public static let nonRenewing = Self(rawValue: "Non-Renewing Subscription")
}

/// `inAppOwnershipType`.
public struct InAppOwnershipType: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchased = Self(rawValue: "PURCHASED")
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")
}

/// `transactionReason`.
public struct TransactionReason: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchase = Self(rawValue: "PURCHASE")
    public static let renewal = Self(rawValue: "RENEWAL")
}

/// `notificationType` of App Store Server Notifications V2.
public struct NotificationType: AppleStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let refund = Self(rawValue: "REFUND")
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    public static let revoke = Self(rawValue: "REVOKE")
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    public static let test = Self(rawValue: "TEST")
}
