import Foundation
import TestSupport
import Testing

/// `--help` is read in terminals of every width: its prose is written as paragraphs, so ArgumentParser
/// wraps them cleanly instead of breaking lines that were broken by hand already.
@Suite("--help texts")
struct HelpTextTests {
    static let commands: [[String]] = [
        [], ["migrate"], ["run"], ["runs"], ["report"], ["prune"], ["grants", "import"], ["config", "check"], ["inspect"],
        ["ledger", "list"], ["ledger", "show"], ["ledger", "waive"], ["ledger", "pending"], ["refund-requests", "answer"],
        ["refund-requests", "show"], ["stripe", "disputes"],
    ]

    @Test("prose wraps as paragraphs at any width, and no line is wider than the terminal", arguments: [60, 100, 200])
    func wrapping(columns: Int) throws {
        for command in Self.commands {
            let result = try CommandRunner.run("clawback", command + ["--help"], environment: ["COLUMNS": String(columns)])
            #expect(result.status == 0)
            let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for line in lines { #expect(line.count <= columns, "\(command) at \(columns) columns: \(line)") }
            // Before USAGE, a line followed by more of its paragraph ends only where the next word would not fit.
            let prose = Array(lines.prefix { !$0.hasPrefix("USAGE:") })
            for index in prose.indices.dropLast() where !prose[index].isEmpty {
                let next = prose[index + 1]
                guard !next.isEmpty, !next.hasPrefix("-"), !next.hasPrefix(" ") else { continue }
                let word = next.split(separator: " ").first?.count ?? 0
                // ArgumentParser fills lines to one column short of the terminal.
                #expect(prose[index].count + 1 + word > columns - 1, "ragged at \(columns) columns in \(command): \(prose[index])")
            }
        }
    }

    @Test("the top-level help names every exit code the program has")
    func exitCodes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: root.appendingPathComponent("Sources/Job/Runtime/ExitStatus.swift"), encoding: .utf8)
        let inCode = Set(source.matches(of: try Regex(#"case \w+ = (\d+)"#)).compactMap { Int(source[$0.output[1].range!]) })
        let help = try CommandRunner.run("clawback", ["--help"], environment: ["COLUMNS": "400"]).standardOutput
        let line = try #require(help.split(separator: "\n").first { $0.hasPrefix("Exit codes:") })
        let named = Set(line.matches(of: try Regex(#"(?:: |; )(\d+) "#)).compactMap { Int(line[$0.output[1].range!]) })
        #expect(named == inCode, "help names \(named.sorted()), the code has \(inCode.sorted())")
    }
}
