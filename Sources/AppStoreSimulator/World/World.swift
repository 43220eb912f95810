public import Foundation

/// Everything Apple knows in the simulation: apps with their keys, and transactions with their refunds,
/// indexed for the endpoints. A value: control updates build a new one.
public struct World: Sendable {
    public private(set) var apps: [String: AppRecord] = [:]
    public private(set) var transactions: [String: TransactionRecord] = [:]
    /// Transaction ids per (bundle, environment, customer), oldest purchase first.
    private var byCustomer: [String: [String]] = [:]
    /// Transaction ids per (bundle, order id).
    private var byOrder: [String: [String]] = [:]
    /// Refund events per (bundle, environment), in date order: what Notification History serves.
    private var events: [String: [RefundEvent]] = [:]

    /// Undecided refund requests, by when Apple decides them (soonest first).
    public private(set) var undecidedRequests: [(due: Date, transactionID: String)] = []

    /// A REFUND, REVOKE (Family Sharing), REFUND_REVERSED, CONSUMPTION_REQUEST or REFUND_DECLINED
    /// notification the App Store sent.
    public struct RefundEvent: Sendable, Equatable {
        public enum Kind: String, Sendable {
            case refund = "REFUND"
            case revoke = "REVOKE"
            case reversal = "REFUND_REVERSED"
            case consumptionRequest = "CONSUMPTION_REQUEST"
            case declined = "REFUND_DECLINED"
        }
        public let kind: Kind
        public let date: Date
        public let transactionID: String
    }

    public init(lines: [WorldLine] = []) {
        for line in lines {
            switch line {
            case .app(let app): apps[app.bundleId] = app
            case .transaction(let transaction): transactions[transaction.transactionId] = transaction
            }
        }
        rebuildIndexes()
    }

    public init(apps: [AppRecord], transactions: [TransactionRecord]) {
        for app in apps { self.apps[app.bundleId] = app }
        for transaction in transactions { self.transactions[transaction.transactionId] = transaction }
        rebuildIndexes()
    }

    /// This world with `lines` added or replacing what they name.
    public func updating(with lines: [WorldLine]) -> World {
        var world = self
        for line in lines {
            switch line {
            case .app(let app): world.apps[app.bundleId] = app
            case .transaction(let transaction): world.transactions[transaction.transactionId] = transaction
            }
        }
        world.rebuildIndexes()
        return world
    }

    private mutating func rebuildIndexes() {
        byCustomer = [:]
        byOrder = [:]
        events = [:]
        undecidedRequests = []
        for transaction in transactions.values {
            if let request = transaction.refundRequest {
                let key = transaction.bundleId + "|" + transaction.environment
                events[key, default: []].append(RefundEvent(kind: .consumptionRequest, date: request.date, transactionID: transaction.transactionId))
                if request.decision == nil {
                    undecidedRequests.append((RefundDecisions.due(request), transaction.transactionId))
                } else if request.decision == RefundEvent.Kind.declined.rawValue, let decided = request.decidedAt {
                    events[key, default: []].append(RefundEvent(kind: .declined, date: decided, transactionID: transaction.transactionId))
                }
            }
            byCustomer[Self.customerKey(transaction), default: []].append(transaction.transactionId)
            if let order = transaction.orderId { byOrder[transaction.bundleId + "|" + order, default: []].append(transaction.transactionId) }
            if let refund = transaction.refund, refund.notified != false {
                let key = transaction.bundleId + "|" + transaction.environment
                let kind: RefundEvent.Kind = refund.type == "FAMILY_REVOKE" ? .revoke : .refund
                events[key, default: []].append(RefundEvent(kind: kind, date: refund.date, transactionID: transaction.transactionId))
                if let reversed = refund.reversedDate {
                    events[key, default: []].append(RefundEvent(kind: .reversal, date: reversed, transactionID: transaction.transactionId))
                }
            }
        }
        for key in byCustomer.keys {
            byCustomer[key]?.sort { lhs, rhs in
                let left = transactions[lhs]?.purchaseDate ?? .distantPast
                let right = transactions[rhs]?.purchaseDate ?? .distantPast
                return left != right ? left < right : lhs < rhs
            }
        }
        undecidedRequests.sort { $0.due != $1.due ? $0.due < $1.due : $0.transactionID < $1.transactionID }
        for key in events.keys {
            events[key]?.sort { $0.date != $1.date ? $0.date < $1.date : ($0.transactionID, $0.kind.rawValue) < ($1.transactionID, $1.kind.rawValue) }
        }
    }

    private static func customerKey(_ transaction: TransactionRecord) -> String {
        transaction.bundleId + "|" + transaction.environment + "|" + transaction.customer
    }

    /// The transaction, if it exists for this app in this environment (Apple's environments are separate).
    public func transaction(_ id: String, bundleID: String, environment: String) -> TransactionRecord? {
        guard let transaction = transactions[id], transaction.bundleId == bundleID, transaction.environment == environment
        else { return nil }
        return transaction
    }

    /// All of the customer's transactions in the app, oldest first, given any of their transaction ids.
    public func customerTransactions(of id: String, bundleID: String, environment: String) -> [TransactionRecord]? {
        guard let anchor = transaction(id, bundleID: bundleID, environment: environment) else { return nil }
        return (byCustomer[Self.customerKey(anchor)] ?? []).compactMap { transactions[$0] }
    }

    /// The refund events of an app in an environment, in date order.
    public func refundEvents(bundleID: String, environment: String) -> [RefundEvent] {
        events[bundleID + "|" + environment] ?? []
    }

    public func transactions(forOrder orderID: String, bundleID: String) -> [TransactionRecord] {
        (byOrder[bundleID + "|" + orderID] ?? []).compactMap { transactions[$0] }
    }
}
