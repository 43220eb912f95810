import Foundation
import Testing

/// The shared code speaks of a store's statement and its driver, never of one store: no type, function,
/// case or variable of the decision core, the runs and their pipeline, the store seam, the metrics, the
/// run summary, the summaries and reports, or the grants, runs and ledger of Storage names a store. A store's
/// knowledge lives in its driver's module (`AppStoreDriver`, `GooglePlayDriver`, `StripeDriver`, and the
/// `AppStore`, `GooglePlay` and `Stripe` protocol modules), and the built-in stores' identities in one file of the core (`BuiltInStores.swift`);
/// a new store is its driver, not an edit here (docs/architecture.md, "Adding a store", which the test-only
/// store of `ThirdStoreTests` follows).
@Suite("The shared code names no store")
struct SharedCodeNamesNoStoreTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The shared code: folders (every Swift file under them) and single files.
    static let shared = [
        "Sources/Reconciliation", "Sources/Job", "Sources/Reports/SummaryReport.swift", "Sources/Reports/DetailReport.swift",
        "Sources/Reports/HTMLSummary.swift", "Sources/Reports/ReportData.swift", "Sources/Reports/ReportTotals.swift",
        "Sources/Reports/StoreBreakdown.swift", "Sources/Reports/ReportGenerator.swift", "Sources/Reports/Workbook",
        "Sources/Storage/GrantPruner.swift", "Sources/Storage/StoreRecords.swift", "Sources/Storage/GrantImport.swift",
        "Sources/Storage/GrantStore.swift", "Sources/Storage/RunStore.swift",
        "Sources/Storage/CheckWriter.swift", "Sources/Storage/RunCounters.swift", "Sources/Storage/StaffLedger.swift",
        "Sources/Storage/Reporting/RecoverySpeed.swift",
    ]
    /// Shared files held to naming a store still, so that this list shrinks: none now. Not yet in the shared
    /// list at all: the refund questions' rows and reports (Storage's refund-request and chargeback-review
    /// stores and Storage/Reporting's lines), each store's own feature; docs/architecture.md lists them.
    static let notYet: Set<String> = []

    /// Where store names are the point: the built-in stores' identities, and the verdicts finance reads by
    /// their stored names (`unknown_to_apple`).
    static let storeNamingFiles: Set<String> = ["Sources/Reconciliation/Stores/BuiltInStores.swift", "Sources/Reconciliation/Verdict.swift"]
    /// A store's name, or a built-in strategy's.
    static let storeWords = ["apple", "google", "stripe", "appstore", "playstore", "itunes", "transactioninfo", "customerhistory", "notifiedrefunds"]

    /// The Swift files of `path`, a folder or a file, relative to the repository.
    static func files(_ path: String) throws -> [String] {
        let url = root.appendingPathComponent(path)
        guard path.hasSuffix(".swift") else {
            let found = FileManager.default.enumerator(atPath: url.path)?.compactMap { $0 as? String } ?? []
            return found.filter { $0.hasSuffix(".swift") }.map { path + "/" + $0 }.sorted()
        }
        return [path]
    }

    static func source(_ path: String) throws -> String { try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) }

    /// The identifiers of Swift source: comments and string literals removed, then every word.
    static func identifiers(_ source: String) -> [String] {
        var code = ""
        var index = source.startIndex
        func rest(_ prefix: String) -> Bool { source[index...].hasPrefix(prefix) }
        while index < source.endIndex {
            if rest("//") {
                index = source[index...].firstIndex(of: "\n") ?? source.endIndex
            } else if rest("/*") {
                index = source[index...].range(of: "*/")?.upperBound ?? source.endIndex
            } else if rest("\"\"\"") {
                let after = source.index(index, offsetBy: 3)
                index = source[after...].range(of: "\"\"\"")?.upperBound ?? source.endIndex
                code += " "
            } else if rest("\"") {
                // A one-line literal: its text skipped (a store's name in a message is text, not a name of the
                // core's), an interpolation's code kept (`\\(configuration.apple.x)` names a store).
                var cursor = source.index(after: index)
                while cursor < source.endIndex, source[cursor] != "\"", source[cursor] != "\n" {
                    if source[cursor...].hasPrefix("\\(") {
                        var depth = 0
                        cursor = source.index(after: cursor)
                        repeat {
                            if source[cursor] == "(" { depth += 1 } else if source[cursor] == ")" { depth -= 1 }
                            code.append(depth == 0 && source[cursor] == ")" ? " " : source[cursor])
                            cursor = source.index(after: cursor)
                        } while depth > 0 && cursor < source.endIndex
                        continue
                    }
                    let step = source[cursor] == "\\" ? 2 : 1
                    cursor = source.index(cursor, offsetBy: step, limitedBy: source.endIndex) ?? source.endIndex
                }
                index = cursor < source.endIndex ? source.index(after: cursor) : cursor
                code += " "
            } else {
                code.append(source[index])
                index = source.index(after: index)
            }
        }
        return code.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).map(String.init)
    }

    @Test("no identifier of the shared code names a store")
    func noStoreNames() throws {
        let files = try Self.shared.flatMap(Self.files)
        #expect(files.count >= 40 && files.contains("Sources/Reconciliation/Reconciler.swift") && files.contains("Sources/Job/Runs/MonthlyRun.swift"))
        // Names the built-in stores declare (`Store.appStore`) may be used where a grant's default store is
        // meant (the core's initializers), never switched on in the shared code: that file's are allowed in the
        // core only.
        let declared = Set(try Self.storeNamingFiles.flatMap { Self.identifiers(try Self.source($0)) })
        var named: [String] = []
        var stillNaming: Set<String> = []
        for file in files where !Self.storeNamingFiles.contains(file) {
            for word in Self.identifiers(try Self.source(file))
            where Self.storeWords.contains(where: { word.lowercased().contains($0) })
                && !(file.hasPrefix("Sources/Reconciliation/") && declared.contains(word))
            {
                if Self.notYet.contains(file) { stillNaming.insert(file) } else { named.append("\(file): \(word)") }
            }
        }
        #expect(named.isEmpty, "store names in the shared code: \(named)")
        #expect(stillNaming == Self.notYet, "no longer naming a store, so off the not-yet list: \(Self.notYet.subtracting(stillNaming))")
    }

    @Test("the check sees names in code and not in comments or text")
    func lintSees() {
        let words = Self.identifiers(
            """
            /// Apple's answer
            let appleFacts = "Google \\"said\\" \\(f(x)) and \\(y)" // google
            /* AppStore */ func decide() {}
            """)
        #expect(words == ["let", "appleFacts", "f", "x", "y", "func", "decide"])
    }
}
