import Foundation
public import Postgres
public import Reconciliation
import Storage

/// A window's report as finance reads it (every run that covers the window, its flagged purchases and its
/// verdict counts), without what differs by nature between two databases (run and entry ids, times): the
/// figure that must not depend on how many daily runs took part.
public struct WindowReport: Equatable, Sendable {
    /// One line per flagged purchase: id, verdict, action, units changed, units clawed back, position.
    public var rows: [String]
    public var counts: [Verdict: Int]

    public init(_ window: ReconciliationWindow, on connection: PostgresConnection) throws {
        let runIDs = try RunStore.covered(run: nil, window: window, on: connection.storage).map(\.run.runID)
        let store = ReportStore(connection.storage)
        var rows: [String] = []
        try store.flagged(runIDs, asOf: Date()) { purchase in
            rows.append(
                [
                    purchase.transactionID, purchase.verdict.rawValue, purchase.action.rawValue, "\(purchase.unitsChange)",
                    "\(purchase.unitsClawedBack)", "\(purchase.position?.units ?? 0)",
                ].joined(separator: "|"))
        }
        self.rows = rows
        counts = try store.verdictCounts(runIDs)
    }
}
