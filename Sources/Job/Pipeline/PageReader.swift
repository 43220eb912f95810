import Reconciliation
import Storage

/// Reads a run's grants a page at a time, one page ahead, on a session of its own: while the job works
/// through a page (and its batches are written on the job's session), the next page is already being
/// read. Memory holds two pages at most.
final class PageReader {
    typealias Page = [(Grant, LedgerHistory)]

    private let session: DatabaseSession
    private let selection: GrantSelection
    private let runID: Int64?
    private let pageSize: Int
    private var ahead: Task<(Page, GrantCursor?), any Error>?
    private(set) var exhausted = false

    init(session: DatabaseSession, selection: GrantSelection, skippingCheckedBy runID: Int64?, pageSize: Int) {
        self.session = session
        self.selection = selection
        self.runID = runID
        self.pageSize = pageSize
    }

    /// The next page's grants (none once the selection is exhausted; a page whose grants were all
    /// checked already is skipped), and the page after it requested.
    func next() async throws -> Page {
        while !exhausted {
            // No page ahead before the first one: after it, one is always ahead until the selection ends.
            let pending = ahead ?? read(after: nil)
            ahead = nil
            let (page, next) = try await pending.value
            if let next { ahead = read(after: next) } else { exhausted = true }
            if !page.isEmpty { return page }
        }
        return []
    }

    /// Waits for a read still under way (a stopped or failed run does not leave one running on the
    /// session), discarding it.
    func settle() async {
        _ = try? await ahead?.value
        ahead = nil
    }

    private func read(after cursor: GrantCursor?) -> Task<(Page, GrantCursor?), any Error> {
        let (session, selection, runID, pageSize) = (session, selection, runID, pageSize)
        return Task {
            try await session.run { connection in
                let page = try GrantStore.page(selection, after: cursor, excludingCheckedBy: runID, limit: pageSize, on: connection)
                let histories = try LedgerHistoryReader.histories(for: page.grants.map(\.transactionID), on: connection)
                return (page.grants.map { ($0, histories[$0.transactionID] ?? LedgerHistory()) }, page.next)
            }
        }
    }
}
