import Foundation
import Postgres
import Storage
import TestSupport
import Testing

/// What the docs tell game developers and operators to type must be what the code accepts: the SQL
/// signatures in integrating.md are PostgreSQL's own, and every flag operations.md names is in `--help`.
@Suite("Documentation against the code")
struct DocumentationContractTests {
    @Test("integrating.md's signatures of the game's five functions are pg_get_function_arguments() of the migrated schema")
    func sqlSignatures() throws {
        let text = try DocumentationTests.read("docs/integrating.md")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var documented: [String: String] = [:]
        for (index, line) in lines.enumerated() {
            guard let match = line.firstMatch(of: #/^`clawback\.(\w+)` \(returns `([^`]+)`\):$/#), index + 2 < lines.count,
                lines[index + 1] == "```sql"
            else { continue }
            documented[String(match.output.1)] = lines[index + 2] + " -> " + match.output.2
        }
        #expect(
            Set(documented.keys) == ["record_grant", "record_google_grant", "record_stripe_grant", "claim_clawbacks", "acknowledge_clawback"],
            "\(documented.keys.sorted())")
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            for (name, signature) in documented {
                let actual = try connection.query(
                    """
                    SELECT pg_get_function_arguments(p.oid) || ' -> ' || CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END
                           || format_type(p.prorettype, NULL)
                    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                    WHERE n.nspname = 'clawback' AND p.proname = \(name)
                    """
                ).rows.map { try $0.decode(String.self, at: 0) }
                #expect(actual == [signature], "clawback.\(name)")
            }
        }
    }

    /// Every `--flag` in backticks in a row of operations.md's Commands table, with the row's command.
    static func documentedFlags() throws -> [(command: [String], flag: String)] {
        let operations = try DocumentationTests.read("docs/operations.md")
        let table = try #require(operations.components(separatedBy: "\n## Commands\n").dropFirst().first?.components(separatedBy: "\n## ").first)
        var result: [(command: [String], flag: String)] = []
        for row in table.split(separator: "\n") where row.hasPrefix("| `clawback ") {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false)
            guard cells.count > 2 else { continue }
            let words = cells[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")).split(separator: " ")
            let command = Array(words.dropFirst().prefix { !$0.hasPrefix("-") && $0.first?.isLowercase == true }.map(String.init))
            for match in row.matches(of: #/--[a-z][a-z0-9-]*/#) { result.append((command, String(match.output))) }
        }
        return result
    }

    @Test("every flag operations.md's command table names is in that command's --help; every flag in the whole document is some command's")
    func flagsInHelp() async throws {
        var helps: [[String]: String] = [:]
        func help(_ command: [String]) async throws -> String {
            if let known = helps[command] { return known }
            let result = try await CommandRunner.run("clawback", command + ["--help"], environment: ["COLUMNS": "400"])
            #expect(result.status == 0, "\(command) --help")
            helps[command] = result.standardOutput
            return result.standardOutput
        }
        let rows = try Self.documentedFlags()
        #expect(rows.count > 15, "the command table names its flags")
        for (command, flag) in rows {
            #expect(try await help(command).contains(flag), "operations.md: clawback \(command.joined(separator: " ")) \(flag)")
        }
        let everything = try DocumentationTests.read("docs/operations.md")
        var all = ""
        for command in HelpTextTests.commands { all += try await help(command) }
        // Every `clawback …` command line the document shows, in backticks or in a shell block.
        let commandLines = everything.matches(of: #/(?m)`clawback [^`\n]*`|^\s*(?:sudo -u clawback )?clawback [^\n]*$/#).map { String($0.output) }
        #expect(commandLines.count > 30)
        for flag in Set(commandLines.flatMap { $0.matches(of: #/--[a-z][a-z0-9-]*/#).map { String($0.output) } }) {
            #expect(all.contains(flag), "operations.md names \(flag), which no command has")
        }
    }
}
