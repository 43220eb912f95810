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
        abstract: "Load grants from JSONL (one grant per line, the grants table's column names).",
        discussion: """
            Every line is validated; each bad one is reported with its number and reason, and nothing is loaded
            if any is bad, unless --skip-invalid. Importing the same file twice adds nothing.
            Exit status: 0 loaded; 65 bad lines (nothing loaded without --skip-invalid); 66 unreadable file; 69 database.
            """)

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The JSONL file.") var file: String
    @Flag(help: "Load the valid lines even when some are bad.") var skipInvalid = false

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.grants")
        let configuration = try configOptions.load(logger: logger)
        guard let data = FileManager.default.contents(atPath: file) else {
            FileHandle.standardError.write(Data("clawback: cannot read \(file)\n".utf8))
            throw ExitCode(66)
        }
        let connection = try database.connect(logger: logger, file: configuration.database.url)
        let outcome: GrantImport.Outcome
        do {
            outcome = try GrantImport.importJSONLines(data, skipInvalid: skipInvalid, on: connection)
        } catch {
            logger.error("import failed", metadata: ["error": "\(error)"])
            throw ExitCodes.unavailable
        }
        for error in outcome.invalid.prefix(100) { FileHandle.standardError.write(Data("\(file): \(error)\n".utf8)) }
        if outcome.invalid.count > 100 { FileHandle.standardError.write(Data("\(file): ... and \(outcome.invalid.count - 100) more bad lines\n".utf8)) }
        if !outcome.invalid.isEmpty && !skipInvalid {
            print("nothing imported: \(outcome.invalid.count) bad line(s) of \(outcome.valid + outcome.invalid.count); fix them or use --skip-invalid")
            throw ExitCodes.dataError
        }
        print("imported \(outcome.inserted) new grant(s); \(outcome.alreadyPresent) already present; \(outcome.invalid.count) bad line(s) skipped")
    }
}
