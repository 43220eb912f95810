public import Foundation

/// `TransactionInfoResponse`.
package struct TransactionInfoResponse: Decodable {
    package let signedTransactionInfo: String
}

/// `HistoryResponse` of Get Transaction History v2.
package struct HistoryResponse: Decodable {
    let revision: String?
    let hasMore: Bool?
    let bundleId: String?
    let appAppleId: Int64?
    let environment: String?
    let signedTransactions: [String]?
}

/// `RefundHistoryResponse` of Get Refund History v2.
package struct RefundHistoryResponse: Decodable {
    let signedTransactions: [String]?
    let revision: String?
    let hasMore: Bool?
}

/// `NotificationHistoryResponse`.
package struct NotificationHistoryResponse: Decodable {
    let paginationToken: String?
    let hasMore: Bool?
    let notificationHistory: [NotificationHistoryItem]?
}

/// One record of Get Notification History: the notification as Apple sent it, and how delivery went.
public struct NotificationHistoryItem: Sendable, Decodable, Equatable {
    public let signedPayload: String
    public let sendAttempts: [SendAttempt]?

    public struct SendAttempt: Sendable, Decodable, Equatable {
        public let attemptDate: Int64?
        public let sendAttemptResult: String?
    }
}

/// `OrderLookupResponse` of Look Up Order ID.
public struct OrderLookup: Sendable, Decodable, Equatable {
    /// 0: valid order id; 1: invalid.
    public let status: Int
    public let signedTransactions: [String]?
}

/// Apple's error body.
struct ErrorPayload: Decodable {
    let errorCode: Int64?
    let errorMessage: String?
}

/// `NotificationHistoryRequest`: dates in milliseconds; a notification type or a transaction id, not both.
public struct NotificationHistoryRequest: Sendable, Encodable, Equatable {
    /// How far back a request may start: Apple keeps 180 days of production history and 30 of sandbox
    /// (an earlier start is 4000012); a day less keeps clear of the edge.
    public static func reach(_ environment: AppStoreEnvironment) -> TimeInterval {
        (environment == .sandbox ? 29 : 179) * 86_400
    }

    public var startDate: Int64
    public var endDate: Int64
    public var notificationType: NotificationType?
    public var notificationSubtype: String?
    public var transactionId: String?
    public var onlyFailures: Bool?

    public init(
        startDate: Int64, endDate: Int64, notificationType: NotificationType? = nil, notificationSubtype: String? = nil,
        transactionID: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionID
        self.onlyFailures = onlyFailures
    }
}

/// Filters of Get Transaction History v2 (each repeated on every page, as Apple requires).
public struct TransactionHistoryQuery: Sendable, Equatable {
    public enum ProductTypeFilter: String, Sendable {
        case autoRenewable = "AUTO_RENEWABLE"
        case nonRenewable = "NON_RENEWABLE"
        case consumable = "CONSUMABLE"
        case nonConsumable = "NON_CONSUMABLE"
    }

    public var startDate: Int64?
    public var endDate: Int64?
    public var productTypes: [ProductTypeFilter]
    public var productIDs: [String]
    public var revoked: Bool?
    public var sortDescending: Bool

    public init(
        startDate: Int64? = nil, endDate: Int64? = nil, productTypes: [ProductTypeFilter] = [], productIDs: [String] = [],
        revoked: Bool? = nil, sortDescending: Bool = false
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productTypes = productTypes
        self.productIDs = productIDs
        self.revoked = revoked
        self.sortDescending = sortDescending
    }

    var parameters: [(String, String)] {
        var parameters: [(String, String)] = []
        if let startDate { parameters.append(("startDate", String(startDate))) }
        if let endDate { parameters.append(("endDate", String(endDate))) }
        parameters += productTypes.map { ("productType", $0.rawValue) }
        parameters += productIDs.map { ("productId", $0) }
        if let revoked { parameters.append(("revoked", revoked ? "true" : "false")) }
        if sortDescending { parameters.append(("sort", "DESCENDING")) }
        return parameters
    }
}
