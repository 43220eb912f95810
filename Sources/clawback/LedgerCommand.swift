public import ArgumentParser
import Job
public import Reconciliation

struct LedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger", abstract: "Staff's view of the clawback ledger: list, show, waive, and what is pending.",
        subcommands: [LedgerListCommand.self, LedgerShowCommand.self, LedgerWaiveCommand.self, LedgerPendingCommand.self])
}

struct LedgerListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List ledger entries with their acknowledgement, oldest first.",
        usage: "clawback ledger list [<options>]")

    @OptionGroup var options: CommandOptions
    @Option(help: "Only this player's entries.") var player: String?
    @Option(help: "Only this transaction's entries.") var transaction: String?
    @Flag(help: "Only entries the game has yet to apply.") var pending = false
    @Option(help: "Only entries of this kind: clawback, adjustment, reversal or review.") var kind: LedgerKind?
    @Option(help: "Only entries acknowledged so: applied, partial, waived or superseded.") var outcome: AcknowledgementOutcome?
    @Option(help: "Only entries written since this date (YYYY-MM-DD or RFC 3339).") var since: String?
    @Option(help: "At most this many entries.") var limit = 100
    @Flag(help: "Print JSON (one array).") var json = false
    @Flag(help: "Print CSV (formula-safe, as the reports).") var csv = false

    func validate() throws {
        if json && csv { throw ValidationError("give --json or --csv, not both") }
        if let since, (try? ReconciliationWindow.date(since)) == nil { throw ValidationError("--since must be YYYY-MM-DD or RFC 3339, not \(since)") }
        guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 100000") }
    }

    func run() async throws {
        let request = LedgerStaff.ListRequest(
            playerID: player, transactionID: transaction, pendingOnly: pending, kind: kind, outcome: outcome,
            since: try since.map { try ReconciliationWindow.date($0) }, limit: limit)
        let format: LedgerStaff.Format = json ? .json : csv ? .csv : .table
        let text = try LedgerStaff.list(request, format: format, try options.context(label: "clawback.ledger"))
        // The CSV ends its last record with CRLF already.
        print(text, terminator: format == .csv ? "" : "\n")
    }
}

struct LedgerShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "One entry: its check and the store's facts, its transaction's chain and the acknowledgements.",
        usage: "clawback ledger show [<options>] <entry-id>")

    @OptionGroup var options: CommandOptions
    @Argument(help: "The entry's id.") var entryID: Int64
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        print(try LedgerStaff.show(entryID, json: json, try options.context(label: "clawback.ledger")))
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

    @OptionGroup var options: CommandOptions
    @Argument(help: "The entry's id.") var entryID: Int64
    @Option(help: "Who decided (recorded as staff:<by>).") var by: String
    @Option(help: "Why: shown to finance with the entry.") var reason: String

    func validate() throws {
        if by.allSatisfy(\.isWhitespace) { throw ValidationError("--by must name who decided") }
        if reason.allSatisfy(\.isWhitespace) { throw ValidationError("--reason must say why") }
    }

    func run() async throws {
        print(try LedgerStaff.waive(entryID, by: by, reason: reason, try options.context(label: "clawback.ledger")))
    }
}

struct LedgerPendingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending", abstract: "How many entries the game has yet to apply, and the oldest one's age (cheap: for a daily cron).",
        usage: "clawback ledger pending [<options>]")

    @OptionGroup var options: CommandOptions
    @Option(help: "Write Prometheus textfile metrics here (atomically).") var metricsFile: String?

    func run() async throws {
        try await LedgerStaff.pending(metricsFile: metricsFile, try options.context(label: "clawback.ledger")).emit()
    }
}

extension LedgerKind: ExpressibleByArgument {}
extension AcknowledgementOutcome: ExpressibleByArgument {}
