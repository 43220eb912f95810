import Reconciliation
import Storage

extension CheckRecord {
    /// Decides `grant` on Apple's answer and keeps Apple's facts when they were verified.
    init(grant: Grant, answer: StoreAnswer, ledger: LedgerHistory, policy: ReconciliationPolicy) {
        let decision = Reconciler.decide(grant: grant, answer: answer, ledger: ledger, policy: policy)
        if case .verified(let facts) = answer {
            self.init(grant: grant, decision: decision, facts: facts, ledgerEntriesSeen: ledger.entries.count)
        } else {
            self.init(grant: grant, decision: decision, facts: nil, ledgerEntriesSeen: ledger.entries.count)
        }
    }
}
