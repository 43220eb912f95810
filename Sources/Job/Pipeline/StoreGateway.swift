import Foundation
public import HTTP
public import Reconciliation
public import Storage

/// Asks a store about one grant and answers with its verified statement, "not found", a review, or
/// "unverified" with a reason. Never throws: every failure becomes an unverified answer, so nothing
/// unverified is ever counted as ok. Each store's gateways live in its own folder (`AppStore/`,
/// `GooglePlay/`); the pipeline, the rules and the ledger see only this contract.
///
/// The contract every strategy keeps (the differential tests hold each one to it): its answer for a grant
/// is what its store's complete per-purchase statement would give (the App Store's Get Transaction Info,
/// Google Play's order), or `unverified`, or, for a grant nothing was refunded on, the weaker
/// `noRefundReported` when a verified refund feed covering the grant lists nothing. Where a strategy
/// cannot conclude, it asks per purchase instead.
public protocol StoreGateway: Sendable {
    /// Called once per attempt, after the run's lock is taken and before any grant is asked about.
    func prepare(_ context: RunContext) async throws
    /// `ledger` is the grant's transaction's ledger so far: a strategy that cannot tell a reversal from
    /// silence asks per transaction when a clawback is open.
    func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer
    /// The answer when it needs no request (the notifications strategy's feed already holds it), so the
    /// job decides in line instead of starting a task; nil means "ask with `answer(for:ledger:)`".
    func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer?
    /// The store's requests sent, rate-limit answers and retries so far.
    var statistics: RequestCounts { get }
    /// Figures of the strategy itself (for example notifications the audit found missing).
    func contribute(to counters: inout RunCounters)
    /// The grants to read, once `prepare` has run: the selection itself, or fewer (the daily run reads only
    /// what the refund feed names).
    func narrowing(_ selection: GrantSelection) -> GrantSelection
    /// Called once after every batch of a complete attempt is committed (not after a stop or failure):
    /// where a strategy may persist state, such as refund-history revisions, that must never run ahead of
    /// the checks it covers.
    func finish() async throws
}

extension StoreGateway {
    public func prepare(_ context: RunContext) async throws {}
    public func finish() async throws {}
    public func contribute(to counters: inout RunCounters) {}
    public func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? { nil }
    public func narrowing(_ selection: GrantSelection) -> GrantSelection { selection }
}

/// What a strategy may read before the first grant is asked about: the run's selection, and the database
/// to read it from.
public struct RunContext: Sendable {
    public var selection: GrantSelection
    public var database: DatabaseSession

    public init(selection: GrantSelection, database: DatabaseSession) {
        self.selection = selection
        self.database = database
    }
}
