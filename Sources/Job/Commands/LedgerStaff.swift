public import Foundation
public import Reconciliation
import Storage

/// Staff's commands over the ledger (`clawback ledger list|show|waive|pending`): each reads or records
/// through Storage and returns what to print; each refusal is an error carrying its exit status.
public enum LedgerStaff {
    /// Which entries `ledger list` shows, as the command line gives them: every field narrows, nil or false
    /// leaves it open.
    public struct ListRequest: Sendable {
        public var playerID: String?
        public var transactionID: String?
        public var pendingOnly: Bool
        public var kind: LedgerKind?
        public var outcome: AcknowledgementOutcome?
        public var since: Date?
        public var limit: Int

        public init(
            playerID: String?, transactionID: String?, pendingOnly: Bool, kind: LedgerKind?, outcome: AcknowledgementOutcome?, since: Date?,
            limit: Int
        ) {
            self.playerID = playerID
            self.transactionID = transactionID
            self.pendingOnly = pendingOnly
            self.kind = kind
            self.outcome = outcome
            self.since = since
            self.limit = limit
        }

        var filter: StaffLedger.Filter {
            var filter = StaffLedger.Filter()
            (filter.playerID, filter.transactionID, filter.pendingOnly) = (playerID, transactionID, pendingOnly)
            (filter.kind, filter.outcome, filter.since, filter.limit) = (kind, outcome, since, limit)
            return filter
        }
    }

    public enum Format: Sendable {
        case table, json, csv
    }

    /// `ledger show` of an entry that does not exist (66).
    public struct NoSuchEntry: ExitStatusCarrying {
        public let entryID: Int64
        public var exitStatus: ExitStatus { .noInput }
        public var description: String { "there is no ledger entry \(entryID)" }
    }

    /// `ledger waive` refused by the database's own rules (CB021: no such entry, 66; the rest, 65): an entry
    /// already acknowledged otherwise, one a game server was handed, a review, a reason that differs.
    public struct WaiveRefused: ExitStatusCarrying {
        public let sqlState: String
        public let message: String
        public var exitStatus: ExitStatus { sqlState == "CB021" ? .noInput : .dataError }
        public var description: String { message }
    }

    /// `ledger pending`'s metrics file or the Pushgateway did not take the figures (73; `reason` says which
    /// and why).
    public struct MetricsNotWritten: ExitStatusCarrying {
        public let reason: String
        public var exitStatus: ExitStatus { .cannotCreateOutput }
        public var description: String { "cannot deliver the metrics: \(reason)" }
    }

    public static func list(_ request: ListRequest, format: Format, _ context: CommandContext) throws -> String {
        let connection = try context.connect()
        let entries = try StaffLedger.list(request.filter, on: connection)
        switch format {
        case .table: return LedgerOutput.table(entries)
        case .json: return LedgerOutput.json(entries)
        case .csv: return LedgerOutput.csv(entries)
        }
    }

    /// One entry: the check that wrote it, and its transaction's whole chain.
    public static func show(_ entryID: Int64, json: Bool, _ context: CommandContext) throws -> String {
        let connection = try context.connect()
        let chain = try StaffLedger.chain(of: entryID, on: connection)
        guard let entry = chain.first(where: { $0.entryID == entryID }) else { throw NoSuchEntry(entryID: entryID) }
        if json { return LedgerOutput.json(chain) }
        let check = try StaffLedger.check(of: entry, on: connection)
        return [
            "entry \(entry.entryID): \(entry.kind.rawValue), \(entry.units) units, transaction \(entry.transactionID), player \(entry.playerID)",
            "\nthe check that wrote it (run \(entry.runID)):",
            TextTable.render(check.map { ["  " + $0.0, $0.1] }),
            "\nthe transaction's entries, oldest first:",
            LedgerOutput.table(chain),
        ].joined(separator: "\n")
    }

    public static func waive(_ entryID: Int64, by person: String, reason: String, _ context: CommandContext) throws -> String {
        let connection = try context.connect()
        do {
            let recorded = try StaffLedger.waive(entryID, by: person, reason: reason, on: connection)
            return recorded ? "entry \(entryID) waived by staff:\(person)" : "entry \(entryID) was waived so already; nothing changed"
        } catch {
            // One of the ledger's own rules (SQLSTATE class CB): the staff member's to read, not a failure.
            guard let refused = DatabaseError(error), refused.isClawbackRule else { throw error }
            throw WaiveRefused(sqlState: refused.sqlState ?? "", message: refused.message)
        }
    }

    /// How many entries the game has yet to apply and the oldest one's age; written to the metrics file when
    /// asked and pushed to the configured Pushgateway (metrics that cannot be delivered end the output, 73:
    /// the figures are still shown).
    public static func pending(metricsFile: String?, _ context: CommandContext) async throws -> CommandOutput {
        let connection = try context.connect()
        let pending = try StaffLedger.pending(on: connection)
        let lines = ["pending entries  \(pending.entries)", "oldest pending   \(Int(pending.oldestAgeSeconds / 3600)) hours"]
        let target = MetricsTarget.configured(file: metricsFile, context.configuration)
        if !target.isEmpty {
            do {
                try await MetricsFile.writeLedger(to: target, pending: pending)
            } catch {
                return CommandOutput(lines, failure: MetricsNotWritten(reason: "\(error)"))
            }
        }
        return CommandOutput(lines)
    }
}
