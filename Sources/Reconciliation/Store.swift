/// The store a purchase was made in: the grants table's `store` (`clawback.store` in the schema), carried by
/// every grant, check and ledger entry so that one ledger holds both stores and finance can tell them apart.
public enum Store: String, Sendable, Equatable, CaseIterable, Codable {
    case appStore = "app_store"
    case googlePlay = "google_play"

    /// For people: "App Store", "Google Play".
    public var displayName: String {
        switch self {
        case .appStore: "App Store"
        case .googlePlay: "Google Play"
        }
    }
}

extension Verdict {
    /// Whether a run of `store`'s grants can reach this verdict (for summaries that list only those).
    public func applies(to store: Store) -> Bool {
        switch self {
        case .unknownToApple, .noRefundReported: store == .appStore
        case .unknownToGoogle: store == .googlePlay
        case .ok, .refunded, .revoked, .refundReversed, .mismatch, .unverified: true
        }
    }
}
