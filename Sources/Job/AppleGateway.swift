public import AppStore
import Foundation
public import Reconciliation
public import Storage

/// Asks Apple about one grant and answers with verified facts, "unknown", or "unverified" with a reason.
/// Never throws: every failure becomes an unverified answer, so nothing unverified is ever counted as ok.
///
/// The contract every strategy keeps (the differential tests hold each one to it): its answer for a grant
/// is what Get Transaction Info would give, or `unverified`, or, for a grant nothing was refunded on, the
/// weaker `noRefundReported` when a verified refund feed covering the grant lists nothing. Where a strategy
/// cannot conclude, it asks per transaction instead.
public protocol AppleGateway: Sendable {
    /// Called once per attempt, after the run's lock is taken and before any grant is asked about.
    func prepare(_ context: RunContext) async throws
    /// `ledger` is the grant's transaction's ledger so far: a strategy that cannot tell a reversal from
    /// silence asks per transaction when a clawback is open.
    func answer(for grant: Grant, ledger: LedgerHistory) async -> AppleAnswer
    /// The answer when it needs no request (the notifications strategy's feed already holds it), so the
    /// job decides in line instead of starting a task; nil means "ask with `answer(for:ledger:)`".
    func localAnswer(for grant: Grant, ledger: LedgerHistory) -> AppleAnswer?
    /// Requests sent and 429s received so far.
    var statistics: AppStoreAPICounters { get }
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

extension AppleGateway {
    public func prepare(_ context: RunContext) async throws {}
    public func finish() async throws {}
    public func contribute(to counters: inout RunCounters) {}
    public func localAnswer(for grant: Grant, ledger: LedgerHistory) -> AppleAnswer? { nil }
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

/// The apps a run can ask about: a Server API client per bundle, and the verifier for their signed data.
public struct AppleApps: Sendable {
    public var clients: [String: AppStoreServerAPIClient]
    public var verifier: SignedDataVerifier
    public var receiptClient: VerifyReceiptClient?
    public var sharedSecrets: [String: String]
    /// Each bundle's App Apple ID: production notifications must carry it (as Apple's libraries require).
    public var appAppleIDs: [String: Int64]

    public init(
        clients: [String: AppStoreServerAPIClient], verifier: SignedDataVerifier, receiptClient: VerifyReceiptClient? = nil,
        sharedSecrets: [String: String] = [:], appAppleIDs: [String: Int64] = [:]
    ) {
        self.clients = clients
        self.verifier = verifier
        self.receiptClient = receiptClient
        self.sharedSecrets = sharedSecrets
        self.appAppleIDs = appAppleIDs
    }

    public var statistics: AppStoreAPICounters { .total(clients.values.map(\.statistics)) }
}

/// `--strategy transaction-info`: Get Transaction Info per grant (complete; Apple-rate-limited): the
/// reference every other strategy is held to. The grant's own environment is asked first, then the other
/// one on 4040010 only: a production grant that Apple knows only in the sandbox is a mismatch (sandbox
/// purchases cost nothing), not "unknown"; an environment that refuses the credentials (401) leaves the
/// grant unverified, since a refusal says nothing about the transaction.
public struct TransactionInfoGateway: AppleGateway {
    let apps: AppleApps

    public init(apps: AppleApps) { self.apps = apps }

    public var statistics: AppStoreAPICounters { apps.statistics }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> AppleAnswer { await answer(for: grant) }

    public func answer(for grant: Grant) async -> AppleAnswer {
        guard let client = apps.clients[grant.bundleID] else {
            return .unverified(reason: "no credentials configured for bundle \(grant.bundleID)")
        }
        let first = AppStoreEnvironment(rawValue: grant.environment)
        let order: [AppStoreEnvironment] = first == .sandbox ? [.sandbox, .production] : [.production, .sandbox]
        if let invalid = AppleAnswer.invalidIDReason(grant.transactionID) { return .invalidTransactionID(reason: invalid) }
        let lookup: TransactionLookupResult
        do {
            lookup = try await client.lookUpTransaction(grant.transactionID, environments: order)
        } catch  where error.appleCode == .invalidTransactionID {
            return .invalidTransactionID(reason: error.description)
        } catch {
            return .unverified(reason: error.description)
        }
        switch lookup {
        case .notFound(let environments):
            return .unknownToApple(environments: environments.map(\.rawValue))
        case .found(let signed, let environment):
            do {
                let payload = try await apps.verifier.verifyTransaction(
                    signed, for: AppExpectation(bundleID: grant.bundleID, environment: environment))
                guard payload.transactionID == grant.transactionID else {
                    return .unverified(
                        reason: "Apple's signed answer is for transaction \(payload.transactionID ?? "none"), not \(grant.transactionID)")
                }
                return .verified(AppleFacts(payload))
            } catch {
                return .unverified(reason: "Apple's answer failed verification: \(error)")
            }
        }
    }
}

extension AppleAnswer {
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

extension AppleFacts {
    /// The facts reconciliation reads, from a verified signed transaction.
    public init(_ payload: TransactionPayload) {
        self.init(
            transactionID: payload.transactionID ?? "", environment: payload.environment?.rawValue, bundleID: payload.bundleID,
            productID: payload.productID,
            quantity: payload.quantity, appAccountToken: payload.appAccountToken, revocationDate: payload.revocationDate,
            revocationType: payload.revocationType?.rawValue, revocationReason: payload.revocationReason,
            revocationPercentage: payload.revocationPercentage, priceMilli: payload.price, currency: payload.currency,
            storefront: payload.storefront)
    }
}
