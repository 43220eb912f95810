import ArgumentParser
import Foundation
import Storage

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

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The JSONL or CSV file.") var file: String
    @Option(help: "jsonl or csv (default: from the file's extension).") var format: String?
    @Flag(help: "Load the valid lines even when some are bad.") var skipInvalid = false

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.grants")
        let configuration = try configOptions.load(logger: logger)
        guard let format = format.map({ GrantImport.Format(rawValue: $0.lowercased()) }) ?? GrantImport.Format(path: file) else {
            FileHandle.standardError.write(
                Data(
                    "clawback: \(self.format.map { "--format \($0) is not jsonl or csv" } ?? "cannot tell the format of \(file) from its extension; give --format jsonl or --format csv")\n"
                        .utf8))
            throw ExitCodes.usage
        }
        guard let data = FileManager.default.contents(atPath: file) else {
            FileHandle.standardError.write(Data("clawback: cannot read \(file)\n".utf8))
            throw ExitCodes.noInput
        }
        let connection = try database.connect(logger: logger, configuration.database)
        let outcome: GrantImport.Outcome
        do {
            outcome = try GrantImport.importData(data, format: format, skipInvalid: skipInvalid, on: connection)
        } catch let error as GrantImport.FileError {
            FileHandle.standardError.write(Data("\(file): \(error)\n".utf8))
            throw ExitCodes.dataError
        } catch {
            logger.error("import failed", metadata: ["error": "\(error)"])
            throw ExitCodes.unavailable
        }
        for error in outcome.invalid.prefix(100) { FileHandle.standardError.write(Data("\(file): \(error)\n".utf8)) }
        if outcome.invalid.count > 100 {
            FileHandle.standardError.write(Data("\(file): ... and \(outcome.invalid.count - 100) more bad lines\n".utf8))
        }
        if !outcome.invalid.isEmpty && !skipInvalid {
            print(
                "nothing imported: \(outcome.invalid.count) bad line(s) of \(outcome.valid + outcome.invalid.count); fix them or use --skip-invalid")
            throw ExitCodes.dataError
        }
        print("imported \(outcome.inserted) new grant(s); \(outcome.alreadyPresent) already present; \(outcome.invalid.count) bad line(s) skipped")
    }
}
