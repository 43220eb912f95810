public import AppStore
import Foundation
public import Job
import Locking
public import Reconciliation
import Storage

/// `--strategy customer-history`: Get Transaction History v2 per Apple account, 20 signed transactions a
/// page, in any state (refunded, revoked, finished consumables included), over the window. Every grant a
/// verified history lists is decided on Apple's signed transaction for exactly that id, so it gets the
/// verdict Get Transaction Info would give. Calls scale with Apple accounts and their purchases / 20, not
/// with grants.
///
/// Which Apple account a grant belongs to is not in the grants table: an app account token or a player id
/// can span several Apple accounts (a player with two devices). So a history covers only the grants it
/// lists. A grant of the same player that no history lists so far anchors a history of its own (another
/// Apple account); one that its own history does not list either (Apple does not know it in that
/// environment, or Apple's purchase date disagrees), or whose own history fails, is asked with Get
/// Transaction Info; the player's other grants try histories of their own.
///
/// Nothing is stored between runs (no revision): a dry, sharded, narrowed or resumed run concludes exactly
/// what a complete one would.
public final class CustomerHistoryGateway: StoreGateway {
    struct AccountHistory: Sendable {
        /// The verified signed transactions the history listed, by transaction id.
        var transactions: [String: StoreStatement] = [:]
        /// Why the history could not be read (nil: it was).
        var failure: String?
    }

    let apps: AppleApps
    let perTransaction: TransactionInfoGateway
    /// Purchase dates asked for; set by `prepare(_:)`.
    private let span = Locked<(start: Date, end: Date)?>(nil)
    /// Per customer (bundle, environment, token or player): the histories read so far, one per Apple account.
    private let histories = Locked<[String: [Task<AccountHistory, Never>]]>([:])

    public init(apps: AppleApps) {
        self.apps = apps
        perTransaction = TransactionInfoGateway(apps: apps)
    }

    public var statistics: AppStoreAPICounters { apps.statistics }

    public func prepare(_ context: RunContext) async throws {
        let window = context.selection.window
        // A day either side: a grant whose recorded purchase time is a little off Apple's is still listed.
        span.withLock { $0 = (window.start - 86_400, window.end + 86_400) }
    }

    static func customerKey(_ grant: Grant) -> String {
        grant.bundleID + "|" + grant.environment.rawValue + "|"
            + (grant.appAccountToken.map { "token:" + $0.uuidString.lowercased() } ?? "player:" + grant.playerID)
    }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer {
        guard apps.clients[grant.bundleID] != nil, StoreAnswer.invalidIDReason(grant.transactionID) == nil
        else { return await perTransaction.answer(for: grant) }
        let key = Self.customerKey(grant)
        var seen = 0
        while true {
            let known = histories.withLock { $0[key] ?? [] }
            for history in known.dropFirst(seen) {
                if let facts = await history.value.transactions[grant.transactionID] { return .verified(facts) }
            }
            seen = known.count
            // No history of this customer lists the grant: read its own Apple account's, unless another grant
            // started one meanwhile (then look at that one first).
            let own = histories.withLock { histories -> Task<AccountHistory, Never>? in
                guard histories[key, default: []].count == seen else { return nil }
                let task = Task { await self.read(anchor: grant) }
                histories[key, default: []].append(task)
                return task
            }
            guard let own else { continue }
            let history = await own.value
            if let facts = history.transactions[grant.transactionID] { return .verified(facts) }
            // Its own account's history does not list it, or could not be read: only Get Transaction Info can
            // say what it is (a history that fails for good, such as 4040001 AccountNotFound, must not leave
            // the grant unverified on every run).
            return await perTransaction.answer(for: grant)
        }
    }

    /// The history of the Apple account that `anchor` belongs to, in the anchor's environment.
    private func read(anchor: Grant) async -> AccountHistory {
        guard let client = apps.clients[anchor.bundleID] else {
            return AccountHistory(failure: "no credentials configured for bundle \(anchor.bundleID)")
        }
        let environment = AppStoreEnvironment(rawValue: anchor.environment.rawValue)
        var query = TransactionHistoryQuery()
        if let span = span.withLock({ $0 }) {
            query.startDate = span.start.appleMilliseconds
            query.endDate = span.end.appleMilliseconds
        }
        var history = AccountHistory()
        let expectation = AppExpectation(bundleID: anchor.bundleID, environment: environment)
        do {
            try await client.transactionHistory(anchor.transactionID, environment: environment, query: query) { page in
                for signed in page {
                    let payload = try await apps.verifier.verifyTransaction(signed, for: expectation)
                    guard let id = payload.transactionID else { continue }
                    history.transactions[id] = StoreStatement(payload)
                }
            }
        } catch let error as AppStoreAPIError where error.isTransactionNotFound {
            // Apple does not know the anchor here: Get Transaction Info decides it (other environment, unknown).
            return AccountHistory()
        } catch {
            // A page that failed, or one signed transaction that did not verify: nothing of this history is
            // trusted, since a partial view cannot tell a missing refund from none.
            return AccountHistory(failure: "transaction history anchored on \(anchor.transactionID): \(error)")
        }
        return history
    }
}
