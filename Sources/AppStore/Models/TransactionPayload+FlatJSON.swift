extension TransactionPayload: FlatJSONDecodable {
    /// The payload from its flat JSON (see `FlatJSON`), member by member as `init(from:)` decodes it; nil
    /// (decode with `JSONDecoder`) when a member is not of its field's type. Unknown keys are skipped, as the
    /// Codable path skips them.
    package init?(flatJSON bytes: [UInt8]) {
        guard let members = FlatJSON.members(bytes) else { return nil }
        self.init()
        for (name, value) in members {
            guard let key = CodingKeys(stringValue: name) else { continue }
            guard assign(value, to: key) else { return nil }
        }
    }

    /// Sets the field of `key`; false when `value` is not of its type.
    private mutating func assign(_ value: FlatJSON.Value, to key: CodingKeys) -> Bool {
        switch key {
        case .transactionID: set(&transactionID, value.string)
        case .originalTransactionID: set(&originalTransactionID, value.string)
        case .webOrderLineItemID: set(&webOrderLineItemID, value.string)
        case .bundleID: set(&bundleID, value.string)
        case .productID: set(&productID, value.string)
        case .subscriptionGroupIdentifier: set(&subscriptionGroupIdentifier, value.string)
        case .purchaseDate: set(&purchaseDate, value.milliseconds)
        case .originalPurchaseDate: set(&originalPurchaseDate, value.milliseconds)
        case .expiresDate: set(&expiresDate, value.milliseconds)
        case .quantity: set(&quantity, value.int32)
        case .type: set(&type, value.string.map { $0.map(ProductType.init(rawValue:)) })
        case .appAccountToken: set(&appAccountToken, value.string)
        case .inAppOwnershipType: set(&inAppOwnershipType, value.string.map { $0.map(InAppOwnershipType.init(rawValue:)) })
        case .signedDate: set(&signedDate, value.milliseconds)
        case .revocationReason: set(&revocationReason, value.int32)
        case .revocationDate: set(&revocationDate, value.milliseconds)
        case .isUpgraded: set(&isUpgraded, value.bool)
        case .offerType: set(&offerType, value.int32)
        case .offerIdentifier: set(&offerIdentifier, value.string)
        case .environment: set(&environment, value.string.map { $0.map(AppStoreEnvironment.init(rawValue:)) })
        case .storefront: set(&storefront, value.string)
        case .storefrontID: set(&storefrontID, value.string)
        case .transactionReason: set(&transactionReason, value.string.map { $0.map(TransactionReason.init(rawValue:)) })
        case .currency: set(&currency, value.string)
        case .price: set(&price, value.int64)
        case .offerDiscountType: set(&offerDiscountType, value.string)
        case .offerPeriod: set(&offerPeriod, value.string)
        case .appTransactionID: set(&appTransactionID, value.string)
        case .revocationType: set(&revocationType, value.string.map { $0.map(RevocationType.init(rawValue:)) })
        case .revocationPercentage: set(&revocationPercentage, value.int32)
        }
    }
}

extension TransactionInfoResponse: FlatJSONDecodable {
    /// The answer of Get Transaction Info from its flat JSON: the one member it needs, a string.
    package init?(flatJSON bytes: [UInt8]) {
        guard let members = FlatJSON.members(bytes),
            case .string(let signed)? = members.first(where: { $0.key == "signedTransactionInfo" })?.value
        else { return nil }
        self.init(signedTransactionInfo: signed)
    }
}

/// Stores `value` in `field` when it is of the field's type (`.some`); false otherwise.
private func set<Field>(_ field: inout Field?, _ value: Field??) -> Bool {
    guard let value else { return false }
    field = value
    return true
}
