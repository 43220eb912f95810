public import Foundation
public import Reconciliation

/// A signed transaction's payload (`JWSTransactionDecodedPayload`), every field Apple documents.
/// Money is Int64 milliunits, percentages Int32 milli-percent, dates from milliseconds.
public struct TransactionPayload: Sendable, Equatable, Decodable {
    public var transactionID: String?
    public var originalTransactionID: String?
    public var webOrderLineItemID: String?
    public var bundleID: String?
    public var productID: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Date?
    public var originalPurchaseDate: Date?
    public var expiresDate: Date?
    public var quantity: Int32?
    public var type: ProductType?
    /// The app account token as Apple sent it (a UUID string).
    public var appAccountToken: String?
    public var inAppOwnershipType: InAppOwnershipType?
    public var signedDate: Date?
    /// Raw `revocationReason`; `revocationReasonValue` is the typed view.
    public var revocationReason: Int32?
    public var revocationDate: Date?
    public var isUpgraded: Bool?
    public var offerType: Int32?
    public var offerIdentifier: String?
    public var environment: AppStoreEnvironment?
    /// ISO 3166-1 alpha-3.
    public var storefront: String?
    public var storefrontID: String?
    public var transactionReason: TransactionReason?
    /// ISO 4217; present only with `price`.
    public var currency: String?
    /// Price of the whole transaction (all of `quantity`), in milliunits. Informational: App Store Connect
    /// reports are the books.
    public var price: Int64?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var appTransactionID: String?
    public var revocationType: RevocationType?
    /// Refunded share in milli-percent (0 to 100000), for refunded transactions.
    public var revocationPercentage: Int32?

    public init() {}

    /// The typed revocation reason.
    public var revocationReasonValue: RevocationReason? { revocationReason.map(RevocationReason.init(rawValue:)) }

    /// The app account token as a UUID, when it is one.
    public var appAccountTokenUUID: UUID? { appAccountToken.flatMap(UUID.init(uuidString:)) }

    /// Whether Apple shows the transaction refunded or revoked.
    public var isRevoked: Bool { revocationDate != nil || revocationType != nil }

    enum CodingKeys: String, CodingKey {
        case transactionID = "transactionId"
        case originalTransactionID = "originalTransactionId"
        case webOrderLineItemID = "webOrderLineItemId"
        case bundleID = "bundleId"
        case productID = "productId"
        case subscriptionGroupIdentifier, purchaseDate, originalPurchaseDate, expiresDate, quantity, type
        case appAccountToken, inAppOwnershipType, signedDate, revocationReason, revocationDate, isUpgraded
        case offerType, offerIdentifier, environment, storefront
        case storefrontID = "storefrontId"
        case transactionReason
        case currency, price, offerDiscountType, offerPeriod
        case appTransactionID = "appTransactionId"
        case revocationType, revocationPercentage
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        transactionID = try container.decodeIfPresent(String.self, forKey: .transactionID)
        originalTransactionID = try container.decodeIfPresent(String.self, forKey: .originalTransactionID)
        webOrderLineItemID = try container.decodeIfPresent(String.self, forKey: .webOrderLineItemID)
        bundleID = try container.decodeIfPresent(String.self, forKey: .bundleID)
        productID = try container.decodeIfPresent(String.self, forKey: .productID)
        subscriptionGroupIdentifier = try container.decodeIfPresent(String.self, forKey: .subscriptionGroupIdentifier)
        purchaseDate = try container.decodeMilliseconds(forKey: .purchaseDate)
        originalPurchaseDate = try container.decodeMilliseconds(forKey: .originalPurchaseDate)
        expiresDate = try container.decodeMilliseconds(forKey: .expiresDate)
        quantity = try container.decodeIfPresent(Int32.self, forKey: .quantity)
        type = try container.decodeIfPresent(ProductType.self, forKey: .type)
        appAccountToken = try container.decodeIfPresent(String.self, forKey: .appAccountToken)
        inAppOwnershipType = try container.decodeIfPresent(InAppOwnershipType.self, forKey: .inAppOwnershipType)
        signedDate = try container.decodeMilliseconds(forKey: .signedDate)
        revocationReason = try container.decodeIfPresent(Int32.self, forKey: .revocationReason)
        revocationDate = try container.decodeMilliseconds(forKey: .revocationDate)
        isUpgraded = try container.decodeIfPresent(Bool.self, forKey: .isUpgraded)
        offerType = try container.decodeIfPresent(Int32.self, forKey: .offerType)
        offerIdentifier = try container.decodeIfPresent(String.self, forKey: .offerIdentifier)
        environment = try container.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        storefront = try container.decodeIfPresent(String.self, forKey: .storefront)
        storefrontID = try container.decodeIfPresent(String.self, forKey: .storefrontID)
        transactionReason = try container.decodeIfPresent(TransactionReason.self, forKey: .transactionReason)
        currency = try container.decodeIfPresent(String.self, forKey: .currency)
        price = try container.decodeIfPresent(Int64.self, forKey: .price)
        offerDiscountType = try container.decodeIfPresent(String.self, forKey: .offerDiscountType)
        offerPeriod = try container.decodeIfPresent(String.self, forKey: .offerPeriod)
        appTransactionID = try container.decodeIfPresent(String.self, forKey: .appTransactionID)
        revocationType = try container.decodeIfPresent(RevocationType.self, forKey: .revocationType)
        revocationPercentage = try container.decodeIfPresent(Int32.self, forKey: .revocationPercentage)
    }
}
