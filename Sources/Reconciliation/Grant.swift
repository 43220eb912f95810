public import Foundation

/// A granted purchase, as the game recorded it in `clawback.grants`.
public struct Grant: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var bundleID: String
    public var productID: String
    public var environment: StoreEnvironment
    public var playerID: String
    public var appAccountToken: UUID?
    public var quantity: Int32
    public var unitsGranted: Int64
    public var priceMilli: Int64?
    public var currency: String?
    public var storefront: String?
    public var purchasedAt: Date
    /// Legacy base64 receipt, when that is all the grant path kept.
    public var receipt: String?
    /// The store the purchase was made in. For Google Play, `transactionID` is the purchase token (the
    /// grant's identity) and `bundleID` the package name.
    public var store: Store
    /// Google Play's order id (the Orders API's key); nil for App Store grants.
    public var orderID: String?

    public init(
        transactionID: String, originalTransactionID: String? = nil, bundleID: String, productID: String,
        environment: StoreEnvironment = .production, playerID: String, appAccountToken: UUID? = nil, quantity: Int32 = 1,
        unitsGranted: Int64, priceMilli: Int64? = nil, currency: String? = nil, storefront: String? = nil, purchasedAt: Date,
        receipt: String? = nil, store: Store = .appStore, orderID: String? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID ?? transactionID
        self.bundleID = bundleID
        self.productID = productID
        self.environment = environment
        self.playerID = playerID
        self.appAccountToken = appAccountToken
        self.quantity = quantity
        self.unitsGranted = unitsGranted
        self.priceMilli = priceMilli
        self.currency = currency
        self.storefront = storefront
        self.purchasedAt = purchasedAt
        self.receipt = receipt
        self.store = store
        self.orderID = orderID
    }
}
