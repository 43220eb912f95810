public import AppStore
import Foundation
public import Reconciliation
import Storage
import Synchronization

/// `--strategy refund-history`: Get Refund History per customer (grouped by app account token, else by
/// player), once per customer per run, shared by all of that customer's grants.
///
/// - Without a stored revision the history is complete: a grant it lists is refunded; one it does not list
///   is verifiably not refunded now, so an open clawback for it was reversed.
/// - With a stored revision only refunds since then come back: a grant not listed has nothing new, and
///   an open clawback stands (reversals are not visible this way; a periodic transaction-info or
///   notifications run sees them).
/// Revisions are saved only when the whole attempt has committed, so a crash can never skip a refund.
/// Assumes one Apple account per customer key: a player paying from two Apple accounts should carry app
/// account tokens.
public final class RefundHistoryGateway: AppleGateway {
    struct CustomerRefunds: Sendable {
        let refunded: [String: AppleFacts]
        let complete: Bool
        let failure: String?
    }

    let apps: AppleApps
    let database: DatabaseSession
    private let stored = Mutex<[String: String]>([:])
    private let fetched = Mutex<[String: Task<CustomerRefunds, Never>]>([:])
    private let newRevisions = Mutex<[String: String]>([:])

    public init(apps: AppleApps, database: DatabaseSession) {
        self.apps = apps
        self.database = database
    }

    public var statistics: AppStoreAPICounters { apps.statistics }

    public func prepare(window: ReconciliationWindow) async throws {
        let revisions = try await database.run { try RefundRevisionStore.revisions(bundleIDs: [], on: $0) }
        stored.withLock { $0 = revisions }
    }

    public func finish() async throws {
        let revisions = newRevisions.withLock { $0 }
        try await database.run { try RefundRevisionStore.save(revisions, on: $0) }
    }

    static func customerKey(_ grant: Grant) -> String {
        grant.bundleID + "|" + grant.environment + "|" + (grant.appAccountToken.map { "token:" + $0.uuidString.lowercased() } ?? "player:" + grant.playerID)
    }

    public func answer(for grant: Grant) async -> AppleAnswer {
        let key = Self.customerKey(grant)
        let task = fetched.withLock { fetched -> Task<CustomerRefunds, Never> in
            if let existing = fetched[key] { return existing }
            let task = Task { await self.fetch(key: key, anchor: grant) }
            fetched[key] = task
            return task
        }
        let refunds = await task.value
        if let failure = refunds.failure { return .unverified(reason: failure) }
        if let facts = refunds.refunded[grant.transactionID] { return .verified(facts) }
        return refunds.complete ? .verified(AppleFacts()) : .noNewRefund
    }

    private func fetch(key: String, anchor: Grant) async -> CustomerRefunds {
        guard let client = apps.clients[anchor.bundleID] else {
            return CustomerRefunds(refunded: [:], complete: false, failure: "no credentials configured for bundle \(anchor.bundleID)")
        }
        let revision = stored.withLock { $0[key] }
        let environment = AppStoreEnvironment(rawValue: anchor.environment)
        do {
            let history = try await client.refundHistory(anchor.transactionID, environment: environment, since: revision)
            var refunded: [String: AppleFacts] = [:]
            for signed in history.signedTransactions {
                let payload = try await apps.verifier.verifyTransaction(
                    signed, for: AppExpectation(bundleID: anchor.bundleID, environment: environment))
                if let id = payload.transactionID { refunded[id] = AppleFacts(payload) }
            }
            if let next = history.revision { newRevisions.withLock { $0[key] = next } }
            return CustomerRefunds(refunded: refunded, complete: revision == nil, failure: nil)
        } catch {
            return CustomerRefunds(refunded: [:], complete: false, failure: "refund history for \(key): \(error)")
        }
    }
}
