import ArgumentParser
import Foundation
import Job
import Logging

struct GrantsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grants", abstract: "Manage grants.", subcommands: [GrantsImportCommand.self])
}

struct GrantsImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Load grants from another system: JSONL or CSV with the grants table's column names.",
        usage: "clawback grants import [<options>] <file>",
        discussion: """
            JSONL: one JSON object per line. CSV: RFC 4180 with a header row. The format comes from the file's \
            extension (.jsonl, .ndjson, .json, .csv) or --format. Columns: transaction_id, bundle_id, product_id, \
            player_id, units_granted and purchased_at (RFC 3339) are required; original_transaction_id, \
            environment (Production or Sandbox), app_account_token, quantity, price_milli, currency, storefront \
            and receipt are optional. Every record is validated; each bad one is reported with its line number \
            and reason, and nothing is loaded if any is bad, unless --skip-invalid. Importing the same file twice \
            adds nothing.

            Exit status: 0 loaded; 65 bad lines (nothing loaded without --skip-invalid) or a bad CSV header; \
            66 unreadable file; 69 database; 64 unknown format.
            """)

    @OptionGroup var options: CommandOptions
    @Argument(help: "The JSONL or CSV file.") var file: String
    @Option(help: "jsonl or csv (default: from the file's extension).") var format: String?
    @Flag(help: "Load the valid lines even when some are bad.") var skipInvalid = false

    func run() async throws {
        let context = try options.context(label: "clawback.grants")
        let outcome = try GrantsImporting.run(.init(file: file, format: format, skipInvalid: skipInvalid), context)
        for line in outcome.badLines {
            // With JSON logs, stderr holds nothing but JSON lines: the skipped lines are log records then.
            if options.logging.logsJSON {
                context.logger.warning("bad line skipped", metadata: ["line": "\(line)"])
            } else {
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
        print(outcome.summary)
    }
}
