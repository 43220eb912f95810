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
        try await lookUpTransaction(
            transactionID, environments: knownEnvironment.map { [$0] } ?? [.production, .sandbox], movingOnAfterRefusal: knownEnvironment == nil)
    }

    /// Get Transaction Info asking `environments` in order, moving on after 4040010 (and, when
    /// `movingOnAfterRefusal`, after a 401 from production). "Not found" needs 4040010 from every environment
    /// asked: an environment that refused the credentials said nothing about the transaction, so when no
    /// other environment has it, the refusal is the answer (thrown), never "not found".
    public func lookUpTransaction(
        _ transactionID: String, environments order: [AppStoreEnvironment], movingOnAfterRefusal: Bool = false
    ) async throws(AppStoreAPIError) -> TransactionLookupResult {
        var asked: [AppStoreEnvironment] = []
        var refusal: AppStoreAPIError?
        for (index, environment) in order.enumerated() {
            asked.append(environment)
            do {
                return .found(signedTransaction: try await transactionInfo(transactionID, environment: environment), environment: environment)
            } catch {
                let isLast = index == order.count - 1
                if case .unauthorized = error.kind, environment == .production, movingOnAfterRefusal, !isLast {
                    refusal = error
                    continue
                }
                guard error.isTransactionNotFound else { throw error }
                if !isLast { continue }
                if let refusal { throw refusal }
                return .notFound(environments: asked)
            }
        }
        if let refusal { throw refusal }
        return .notFound(environments: asked)
    }
}
