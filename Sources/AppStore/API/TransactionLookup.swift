/// Where a transaction was found.
public enum TransactionLookupResult: Sendable, Equatable {
    /// Apple's signed transaction (not yet verified) and the environment that answered.
    case found(signedTransaction: String, environment: AppStoreEnvironment)
    /// 4040010 in every environment asked: Apple does not know this transaction id.
    case notFound(environments: [AppStoreEnvironment])
}

extension AppStoreServerAPIClient {
    /// Get Transaction Info with Apple's environment rule: a grant whose environment is known is asked there
    /// only; otherwise production first, then sandbox on 4040010 TransactionIdNotFoundError (and on 401 from
    /// production, which apps never released to production receive).
    public func lookUpTransaction(_ transactionID: String, knownEnvironment: AppStoreEnvironment?)
        async throws(AppStoreAPIError) -> TransactionLookupResult
    {
        try await lookUpTransaction(transactionID, environments: knownEnvironment.map { [$0] } ?? [.production, .sandbox])
    }

    /// Get Transaction Info asking `environments` in order, moving on after 4040010 (or a 401 from production).
    public func lookUpTransaction(_ transactionID: String, environments order: [AppStoreEnvironment])
        async throws(AppStoreAPIError) -> TransactionLookupResult
    {
        var asked: [AppStoreEnvironment] = []
        for (index, environment) in order.enumerated() {
            asked.append(environment)
            do {
                return .found(signedTransaction: try await transactionInfo(transactionID, environment: environment), environment: environment)
            } catch {
                let isLast = index == order.count - 1
                if error.isTransactionNotFound && !isLast { continue }
                if case .unauthorized = error.kind, environment == .production, !isLast { continue }
                if error.isTransactionNotFound { return .notFound(environments: asked) }
                throw error
            }
        }
        return .notFound(environments: asked)
    }
}
