public import Foundation

/// An App Store Server Notification V2 (`responseBodyV2DecodedPayload`).
public struct NotificationPayload: Sendable, Equatable, Decodable {
    public var notificationType: NotificationType?
    public var subtype: String?
    public var notificationUUID: String?
    public var version: String?
    public var signedDate: Date?
    public var data: NotificationData?
    public var summary: NotificationSummary?
    public var externalPurchaseToken: ExternalPurchaseToken?

    enum CodingKeys: String, CodingKey {
        case notificationType, subtype, notificationUUID, version, signedDate, data, summary, externalPurchaseToken
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        notificationType = try container.decodeIfPresent(NotificationType.self, forKey: .notificationType)
        subtype = try container.decodeIfPresent(String.self, forKey: .subtype)
        notificationUUID = try container.decodeIfPresent(String.self, forKey: .notificationUUID)
        version = try container.decodeIfPresent(String.self, forKey: .version)
        signedDate = try container.decodeMilliseconds(forKey: .signedDate)
        data = try container.decodeIfPresent(NotificationData.self, forKey: .data)
        summary = try container.decodeIfPresent(NotificationSummary.self, forKey: .summary)
        externalPurchaseToken = try container.decodeIfPresent(ExternalPurchaseToken.self, forKey: .externalPurchaseToken)
    }

    /// The app and environment the notification is about, wherever Apple put them.
    var appContext: (bundleID: String?, appAppleID: Int64?, environment: AppStoreEnvironment?) {
        if let data { return (data.bundleID, data.appAppleID, data.environment) }
        if let summary { return (summary.bundleID, summary.appAppleID, summary.environment) }
        if let token = externalPurchaseToken {
            let sandbox = token.externalPurchaseID?.hasPrefix("SANDBOX") == true
            return (token.bundleID, token.appAppleID, sandbox ? .sandbox : .production)
        }
        return (nil, nil, nil)
    }
}

/// `data` of a notification: the app, and the signed transaction and renewal info it concerns.
public struct NotificationData: Sendable, Equatable, Decodable {
    public var environment: AppStoreEnvironment?
    public var appAppleID: Int64?
    public var bundleID: String?
    public var bundleVersion: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    public var status: Int32?
    public var consumptionRequestReason: String?

    enum CodingKeys: String, CodingKey {
        case environment
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
        case bundleVersion, signedTransactionInfo
        case signedRenewalInfo, status, consumptionRequestReason
    }
}

/// `summary` of a notification (renewal-date extension summaries).
public struct NotificationSummary: Sendable, Equatable, Decodable {
    public var environment: AppStoreEnvironment?
    public var appAppleID: Int64?
    public var bundleID: String?

    enum CodingKeys: String, CodingKey {
        case environment
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
    }
}

/// `externalPurchaseToken` of a notification.
public struct ExternalPurchaseToken: Sendable, Equatable, Decodable {
    public var externalPurchaseID: String?
    public var appAppleID: Int64?
    public var bundleID: String?

    enum CodingKeys: String, CodingKey {
        case externalPurchaseID = "externalPurchaseId"
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
    }
}

/// A subscription's signed renewal info (`JWSRenewalInfoDecodedPayload`), the fields clawback reads.
public struct RenewalInfoPayload: Sendable, Equatable, Decodable {
    public var environment: AppStoreEnvironment?
    public var signedDate: Date?
    public var originalTransactionID: String?
    public var productID: String?
    public var autoRenewProductID: String?
    public var autoRenewStatus: Int32?

    enum CodingKeys: String, CodingKey {
        case environment, signedDate
        case originalTransactionID = "originalTransactionId"
        case productID = "productId"
        case autoRenewProductID = "autoRenewProductId"
        case autoRenewStatus
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        environment = try container.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        signedDate = try container.decodeMilliseconds(forKey: .signedDate)
        originalTransactionID = try container.decodeIfPresent(String.self, forKey: .originalTransactionID)
        productID = try container.decodeIfPresent(String.self, forKey: .productID)
        autoRenewProductID = try container.decodeIfPresent(String.self, forKey: .autoRenewProductID)
        autoRenewStatus = try container.decodeIfPresent(Int32.self, forKey: .autoRenewStatus)
    }
}
