import Foundation
import Testing

/// Every exit of clawback goes through `ExitStatus` (architecture.md, "One exit path"): in Job and the command
/// line, nothing calls `exit` but `ExitStatus.exitProcess()`, and ArgumentParser's own `exit(withError:)` for
/// --help, --version and usage errors.
@Suite("One exit path")
struct OneExitPathTests {
    @Test("no exit( in Sources/Job or Sources/clawback but ExitStatus's own and ArgumentParser's")
    func oneExitPath() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var found: [String] = []
        for folder in ["Sources/Job", "Sources/clawback"] {
            let base = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            #expect(!files.isEmpty)
            for file in files where file != "Runtime/ExitStatus.swift" {
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    if code.range(of: #"(^|[^A-Za-z_])(Foundation\.|Glibc\.)?(_)?exit\((?!withError)"#, options: .regularExpression) != nil {
                        found.append("\(folder)/\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        #expect(found.isEmpty, "exits outside ExitStatus: \(found)")
    }
}
