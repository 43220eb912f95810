public import AppStore
import Foundation
public import HTTP
public import Job
public import Reconciliation

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
public struct TransactionInfoGateway: StoreGateway {
    let apps: AppleApps

    public init(apps: AppleApps) { self.apps = apps }

    public var statistics: AppStoreAPICounters { apps.statistics }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer { await answer(for: grant) }

    public func answer(for grant: Grant) async -> StoreAnswer {
        guard let client = apps.clients[grant.bundleID] else {
            return .unverified(reason: "no credentials configured for bundle \(grant.bundleID)")
        }
        let first = AppStoreEnvironment(rawValue: grant.environment.rawValue)
        let order: [AppStoreEnvironment] = first == .sandbox ? [.sandbox, .production] : [.production, .sandbox]
        if let invalid = StoreAnswer.invalidIDReason(grant.transactionID) { return .invalidTransactionID(reason: invalid) }
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
                return .verified(StoreStatement(payload))
            } catch {
                return .unverified(reason: "Apple's answer failed verification: \(error)")
            }
        }
    }
}
