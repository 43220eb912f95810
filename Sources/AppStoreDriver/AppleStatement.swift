public import AppStore
import Foundation
import Job
public import Reconciliation

/// The App Store's statements in the rules' terms: what each of Apple's answers means for a grant.
extension StoreAnswer {
    /// 4040010 TransactionIdNotFoundError in every environment asked: Apple documents that the transaction
    /// does not exist there, so the studio may choose to claw it back (`run.claw_back_unknown_to_apple`).
    static func unknownToApple(environments: [String]) -> StoreAnswer {
        .notFound(
            conclusive: true,
            detail: "Apple answered 4040010 TransactionIdNotFoundError in \(environments.joined(separator: " and "))")
    }

    /// No App Store purchase can have this id: it is not decimal digits, or Apple refused it with 4000006
    /// InvalidTransactionIdError. Judged like an unknown transaction (a forged or corrupted grant) but never
    /// clawed back, since Apple was not asked about a purchase; never left unverified either: asking again
    /// could never give another answer.
    static func invalidTransactionID(reason: String) -> StoreAnswer { .notFound(conclusive: false, detail: reason) }

    /// Why `transactionID` cannot be an App Store transaction id (Apple's are decimal digits, 64-bit
    /// range), or nil when it can. Checked before asking, so a corrupted grant costs no request.
    static func invalidIDReason(_ transactionID: String) -> String? {
        let utf8 = transactionID.utf8
        guard !utf8.isEmpty, utf8.count <= 20, utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return "not an App Store transaction id (Apple's are up to 20 decimal digits): no App Store purchase has it"
        }
        return nil
    }
}

extension StoreStatement {
    /// The statement reconciliation reads, from a verified signed transaction.
    public init(_ payload: TransactionPayload) {
        self.init(
            transactionID: payload.transactionID ?? "", environment: payload.environment.map { StoreEnvironment(rawValue: $0.rawValue) },
            bundleID: payload.bundleID, productID: payload.productID, quantity: payload.quantity, appAccountToken: payload.appAccountToken,
            revocationDate: payload.revocationDate, refundKind: payload.revocationType.map(RefundKind.init(appStore:)),
            refundReason: payload.revocationReasonValue, revocationPercentage: payload.revocationPercentage,
            priceMilli: payload.price, currency: payload.currency, storefront: payload.storefront)
    }
}

extension RefundKind {
    /// Apple's `revocationType`: its three documented values, anything else kept for a person.
    init(appStore type: RevocationType) {
        switch type {
        case .refundFull: self = .full
        case .refundProrated: self = .prorated
        case .familyRevoke: self = .familyRevoke
        default: self = .unknown(type.rawValue)
        }
    }
}
