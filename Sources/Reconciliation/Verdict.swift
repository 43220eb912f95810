/// What clawback concluded about one grant.
public enum Verdict: String, Sendable, Equatable, CaseIterable, Codable, CodingKeyRepresentable {
    case ok
    /// The store refunded it (in full, a share, a chargeback or fraud, or a revocation date without a kind).
    case refunded
    /// The store revoked it through family sharing.
    case revoked
    /// A clawback is open but the store no longer shows a revocation: the refund was reversed.
    case refundReversed = "refund_reversed"
    /// The App Store does not know this transaction (4040010 in every environment, or an id none of its
    /// transactions can have). Stored and read by finance under this name: see `Verdict.unknown(to:)`.
    case unknownToApple = "unknown_to_apple"
    /// Google Play's Orders API answered 404 notFound for the grant's order: review, never a clawback (Google
    /// does not document that this proves the order never existed).
    case unknownToGoogle = "unknown_to_google"
    /// A store without a verdict of its own (its `StoreDescription.unknownVerdict`) does not know the purchase:
    /// review, never a clawback.
    case unknownToStore = "unknown_to_store"
    /// The store's statement disagrees with the grant, or calls for a person in another way.
    case mismatch
    /// A verified refund feed covering the grant lists no refund of it. Weaker than `ok`: the store reported
    /// no refund, it did not confirm the purchase (and cannot reveal an unknown or mismatched grant).
    case noRefundReported = "no_refund_reported"
    /// No verified answer: retried by the next run, never counted as ok.
    case unverified
}
