import ArgumentParser
import Foundation
import Job
import Postgres
import Reconciliation
import Reports
import Storage

struct LedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger", abstract: "Staff's view of the clawback ledger: list, show, waive, and what is pending.",
        subcommands: [LedgerListCommand.self, LedgerShowCommand.self, LedgerWaiveCommand.self, LedgerPendingCommand.self])
}

struct LedgerListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List ledger entries with their acknowledgement, oldest first.",
        usage: "clawback ledger list [<options>]")

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Option(help: "Only this player's entries.") var player: String?
    @Option(help: "Only this transaction's entries.") var transaction: String?
    @Flag(help: "Only entries the game has yet to apply.") var pending = false
    @Option(help: "Only entries of this kind: clawback, adjustment, reversal or review.") var kind: String?
    @Option(help: "Only entries acknowledged so: applied, partial, waived or superseded.") var outcome: String?
    @Option(help: "Only entries written since this date (YYYY-MM-DD or RFC 3339).") var since: String?
    @Option(help: "At most this many entries.") var limit = 100
    @Flag(help: "Print JSON (one array).") var json = false
    @Flag(help: "Print CSV (formula-safe, as the reports).") var csv = false

    func validate() throws {
        if json && csv { throw ValidationError("give --json or --csv, not both") }
        if let kind, !["clawback", "adjustment", "reversal", "review"].contains(kind) {
            throw ValidationError("--kind must be clawback, adjustment, reversal or review, not \(kind)")
        }
        if let outcome, !["applied", "partial", "waived", "superseded"].contains(outcome) {
            throw ValidationError("--outcome must be applied, partial, waived or superseded, not \(outcome)")
        }
        if let since, (try? ReconciliationWindow.date(since)) == nil { throw ValidationError("--since must be YYYY-MM-DD or RFC 3339, not \(since)") }
        guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 100000") }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.ledger")
        let configuration = try configOptions.load(logger: logger)
        let connection = try database.connect(logger: logger, configuration.database)
        var filter = LedgerBook.Filter()
        filter.playerID = player
        filter.transactionID = transaction
        filter.pendingOnly = pending
        filter.kind = kind
        filter.outcome = outcome
        filter.since = try since.map { try ReconciliationWindow.date($0) }
        filter.limit = limit
        let entries = try LedgerBook.list(filter, on: connection)
        if json {
            print(LedgerOutput.json(entries))
        } else if csv {
            print(LedgerOutput.csv(entries), terminator: "")
        } else {
            print(LedgerOutput.table(entries))
        }
    }
}

struct LedgerShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "One entry: its check and Apple's facts, its transaction's chain and the acknowledgements.",
        usage: "clawback ledger show [<options>] <entry-id>")

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The entry's id.") var entryID: Int64
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.ledger")
        let configuration = try configOptions.load(logger: logger)
        let connection = try database.connect(logger: logger, configuration.database)
        let chain = try LedgerBook.chain(of: entryID, on: connection)
        guard let entry = chain.first(where: { $0.entryID == entryID }) else {
            FileHandle.standardError.write(Data("clawback: there is no ledger entry \(entryID)\n".utf8))
            throw ExitCodes.noInput
        }
        let check = try LedgerBook.check(of: entry, on: connection)
        if json {
            print(LedgerOutput.json(chain))
            return
        }
        print("entry \(entry.entryID): \(entry.kind), \(entry.units) units, transaction \(entry.transactionID), player \(entry.playerID)")
        print("\nthe check that wrote it (run \(entry.runID)):")
        print(TextTable.render(check.map { ["  " + $0.0, $0.1] }))
        print("\nthe transaction's entries, oldest first:")
        print(LedgerOutput.table(chain))
    }
}

struct LedgerWaiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "waive", abstract: "Record that the studio will not take an entry's units back: who decided, and why.",
        usage: "clawback ledger waive [<options>] <entry-id>",
        discussion: """
            The waiver is final, like every acknowledgement: the game is never handed the entry again, and finance sees \
            it as waived. Waiving the same entry again with the same reason changes nothing; anything else is refused, \
            and so is an entry a game server was handed (it may have applied it: let its consumer acknowledge it).
            """)

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The entry's id.") var entryID: Int64
    @Option(help: "Who decided (recorded as staff:<by>).") var by: String
    @Option(help: "Why: shown to finance with the entry.") var reason: String

    func validate() throws {
        if by.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--by must name who decided") }
        if reason.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--reason must say why") }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.ledger")
        let configuration = try configOptions.load(logger: logger)
        let connection = try database.connect(logger: logger, configuration.database)
        do {
            let recorded = try LedgerBook.waive(entryID, by: by, reason: reason, on: connection)
            print(recorded ? "entry \(entryID) waived by staff:\(by)" : "entry \(entryID) was waived so already; nothing changed")
        } catch let error as PostgresError where error.sqlState?.hasPrefix("CB") == true {
            FileHandle.standardError.write(Data("clawback: \(error.message)\n".utf8))
            throw error.sqlState == "CB021" ? ExitCodes.noInput : ExitCodes.dataError
        }
    }
}

struct LedgerPendingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending", abstract: "How many entries the game has yet to apply, and the oldest one's age (cheap: for a daily cron).",
        usage: "clawback ledger pending [<options>]")

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Option(help: "Write Prometheus textfile metrics here (atomically).") var metricsFile: String?

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.ledger")
        let configuration = try configOptions.load(logger: logger)
        let connection = try database.connect(logger: logger, configuration.database)
        let pending = try LedgerBook.pending(on: connection)
        print("pending entries  \(pending.entries)\noldest pending   \(Int(pending.oldestAgeSeconds / 3600)) hours")
        if let metricsFile {
            do {
                try MetricsFile.writeLedger(to: metricsFile, pending: pending)
            } catch {
                FileHandle.standardError.write(Data("clawback: cannot write \(metricsFile): \(error)\n".utf8))
                throw ExitCodes.cannotCreateOutput
            }
        }
    }
}

/// The ledger commands' output: a table for people, JSON for scripts, CSV for spreadsheets.
enum LedgerOutput {
    static let columns = [
        "entry_id", "transaction_id", "kind", "units", "reverses_entry_id", "player_id", "product_id", "created_at", "outcome",
        "units_applied", "acknowledged_by", "acknowledged_at", "note",
    ]

    static func cells(_ entry: LedgerBook.Entry) -> [String?] {
        [
            String(entry.entryID), entry.transactionID, entry.kind, String(entry.units), entry.reversesEntryID.map(String.init), entry.playerID,
            entry.productID, PostgresTimestamp.format(entry.createdAt), entry.outcome ?? (entry.kind == "review" ? nil : "pending"),
            entry.unitsApplied.map(String.init), entry.acknowledgedBy, entry.acknowledgedAt.map(PostgresTimestamp.format), entry.note,
        ]
    }

    static func table(_ entries: [LedgerBook.Entry]) -> String {
        let shown = ["entry", "transaction", "kind", "units", "player", "product", "outcome", "applied", "by"]
        return TextTable.render(
            [shown]
                + entries.map { entry in
                    let cells = cells(entry)
                    return [0, 1, 2, 3, 5, 6, 8, 9, 10].map { cells[$0] ?? "" }
                })
    }

    static func json(_ entries: [LedgerBook.Entry]) -> String {
        let objects: [[String: Any]] = entries.map { entry in
            var object: [String: Any] = [:]
            for (name, value) in zip(columns, cells(entry)) { object[name] = value ?? NSNull() }
            object["units"] = entry.units
            object["entry_id"] = entry.entryID
            object["units_applied"] = entry.unitsApplied ?? NSNull()
            return object
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func csv(_ entries: [LedgerBook.Entry]) -> String {
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendHeader(columns)
        for entry in entries { writer.appendRow(cells(entry).map(CSVField.optionalText)) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
