/// An App Store Server API `errorCode`, kept raw so that codes Apple adds later survive; the known ones are
/// constants, with how to react to each.
public struct AppleErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }

    public static let generalBadRequest = Self(rawValue: 4_000_000)
    public static let invalidAppIdentifier = Self(rawValue: 4_000_002)
    public static let invalidRequestRevision = Self(rawValue: 4_000_005)
    public static let invalidTransactionID = Self(rawValue: 4_000_006)
    public static let invalidOriginalTransactionID = Self(rawValue: 4_000_008)
    public static let startDateTooFarInPast = Self(rawValue: 4_000_012)
    public static let startDateAfterEndDate = Self(rawValue: 4_000_013)
    public static let invalidPaginationToken = Self(rawValue: 4_000_014)
    public static let invalidStartDate = Self(rawValue: 4_000_015)
    public static let invalidEndDate = Self(rawValue: 4_000_016)
    public static let paginationTokenExpired = Self(rawValue: 4_000_017)
    public static let invalidNotificationType = Self(rawValue: 4_000_018)
    public static let multipleFiltersSupplied = Self(rawValue: 4_000_019)
    public static let invalidCustomerConsented = Self(rawValue: 4_000_035)
    public static let invalidDeliveryStatus = Self(rawValue: 4_000_036)
    public static let invalidSampleContentProvided = Self(rawValue: 4_000_041)
    public static let invalidRefundPreference = Self(rawValue: 4_000_044)
    public static let appTransactionIDNotSupported = Self(rawValue: 4_000_048)
    public static let familyTransactionNotSupported = Self(rawValue: 4_000_185)
    public static let consumptionPercentageAutoRenewableSubscription = Self(rawValue: 4_000_209)
    public static let accountNotFound = Self(rawValue: 4_040_001)
    public static let accountNotFoundRetryable = Self(rawValue: 4_040_002)
    public static let appNotFound = Self(rawValue: 4_040_003)
    public static let appNotFoundRetryable = Self(rawValue: 4_040_004)
    public static let originalTransactionIDNotFound = Self(rawValue: 4_040_005)
    public static let originalTransactionIDNotFoundRetryable = Self(rawValue: 4_040_006)
    public static let transactionIDNotFound = Self(rawValue: 4_040_010)
    public static let rateLimitExceeded = Self(rawValue: 4_290_000)
    public static let generalInternal = Self(rawValue: 5_000_000)
    public static let generalInternalRetryable = Self(rawValue: 5_000_001)

    /// How a caller should react, per Apple's "Errors to retry" list and endpoint pages.
    public enum RetryClass: Sendable, Equatable {
        /// Apple's retryable set (4040002, 4040004, 4040006, 5000001): retry with backoff.
        case retry
        /// 5000000 "Server error. Try again later": retry, but not at once.
        case retryAfterDelay
        /// 4290000: wait until Retry-After, then retry.
        case rateLimited
        /// Everything else, including codes this build does not know: the item fails with this reason.
        case fail
    }

    public var retryClass: RetryClass {
        switch self {
        case .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIDNotFoundRetryable,
            .generalInternalRetryable:
            .retry
        case .generalInternal: .retryAfterDelay
        case .rateLimitExceeded: .rateLimited
        default: .fail
        }
    }

    public var name: String? {
        switch self {
        case .generalBadRequest: "GeneralBadRequestError"
        case .invalidAppIdentifier: "InvalidAppIdentifierError"
        case .invalidRequestRevision: "InvalidRequestRevisionError"
        case .invalidTransactionID: "InvalidTransactionIdError"
        case .invalidOriginalTransactionID: "InvalidOriginalTransactionIdError"
        case .startDateTooFarInPast: "StartDateTooFarInPastError"
        case .startDateAfterEndDate: "StartDateAfterEndDateError"
        case .invalidPaginationToken: "InvalidPaginationTokenError"
        case .invalidStartDate: "InvalidStartDateError"
        case .invalidEndDate: "InvalidEndDateError"
        case .paginationTokenExpired: "PaginationTokenExpiredError"
        case .invalidNotificationType: "InvalidNotificationTypeError"
        case .multipleFiltersSupplied: "MultipleFiltersSuppliedError"
        case .invalidCustomerConsented: "InvalidCustomerConsentedError"
        case .invalidDeliveryStatus: "InvalidDeliveryStatusError"
        case .invalidSampleContentProvided: "InvalidSampleContentProvidedError"
        case .invalidRefundPreference: "InvalidRefundPreferenceError"
        case .appTransactionIDNotSupported: "AppTransactionIdNotSupportedError"
        case .familyTransactionNotSupported: "FamilyTransactionNotSupportedError"
        case .consumptionPercentageAutoRenewableSubscription: "ConsumptionPercentageAutoRenewableSubscriptionError"
        case .accountNotFound: "AccountNotFoundError"
        case .accountNotFoundRetryable: "AccountNotFoundRetryableError"
        case .appNotFound: "AppNotFoundError"
        case .appNotFoundRetryable: "AppNotFoundRetryableError"
        case .originalTransactionIDNotFound: "OriginalTransactionIdNotFoundError"
        case .originalTransactionIDNotFoundRetryable: "OriginalTransactionIdNotFoundRetryableError"
        case .transactionIDNotFound: "TransactionIdNotFoundError"
        case .rateLimitExceeded: "RateLimitExceededError"
        case .generalInternal: "GeneralInternalError"
        case .generalInternalRetryable: "GeneralInternalRetryableError"
        default: nil
        }
    }

    public var description: String { name.map { "\(rawValue) \($0)" } ?? "\(rawValue) (unknown to this clawback)" }
}
