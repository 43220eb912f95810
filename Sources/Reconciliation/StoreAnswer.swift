/// What a store said about a grant's purchase. Only `.verified` carries the store's statement, and only a
/// statement about the grant's own purchase leads to a definite verdict: every other case is a narrower
/// statement (`noRefundReported`, `notFound`), something for a person (`review`) or no statement at all
/// (`unverified`).
public enum StoreAnswer: Sendable, Equatable {
    /// The store's verified statement about exactly this purchase, as it stands now.
    case verified(StoreStatement)
    /// The store answered that it does not know the purchase. `conclusive` when the store documents that
    /// answer as proof the purchase does not exist in any environment (the App Store's 4040010 in both): the
    /// studio may then choose to claw it back (`ReconciliationPolicy.clawBackUnknown`). Otherwise (an id no
    /// purchase of the store can have, an answer the store does not document as proof) a person reviews it.
    case notFound(conclusive: Bool, detail: String)
    /// No verified answer (transport, 5xx, refused credentials, rate-limit budget, bad signature, an answer
    /// that cannot cover the grant, ...): never counted as ok, retried by the next run.
    case unverified(reason: String)
    /// A verified refund feed that covers the grant (its app, its environment and every instant since its
    /// purchase) lists no refund or revocation of it. Weaker than `.verified`: the store did not confirm the
    /// purchase, it only reported no refund, so the verdict is `no_refund_reported`, never `ok`, and it can
    /// never close an open clawback (a strategy asks per purchase then).
    case noRefundReported(source: String)
    /// The store's own answer that calls for a person, never for units moved (an order that disagrees with
    /// the grant, a refund no longer shown where the store documents no reversal, ...).
    case review(ReviewReason, detail: String)
}

/// Why a store's answer goes to a person: the review entry's reason and the last part of its idempotency key
/// (`review:<raw value>`). Stored in the ledger, so a value never changes once released. Each store declares
/// its own reasons beside its gateway; the rules only carry them.
public struct ReviewReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }
}
