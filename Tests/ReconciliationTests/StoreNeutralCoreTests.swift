import Foundation
import Testing

/// The decision core speaks of a store's statement, never of one store: outside the store enumeration and the
/// stored values finance reads (the verdicts, the strategies), no type, function, case or variable of
/// Sources/Reconciliation names a store; the other files may only use those names (a grant's default store,
/// `Verdict.unknownToApple`). A new store is a gateway in Job, not an edit of the rules.
@Suite("The decision core names no store")
struct StoreNeutralCoreTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Reconciliation")
    /// Where store names are the point: the enumeration of stores, and the enumerations whose raw values are
    /// stored and read by finance and operators (`unknown_to_apple`, `google-orders`).
    static let storeNamingFiles: Set<String> = ["Store.swift", "Verdict.swift", "RunStrategy.swift"]
    static let storeWords = ["apple", "google", "appstore", "playstore", "itunes"]

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
                // A one-line literal, escapes skipped; an interpolation's code is kept out too (a store's name
                // in a message is text, not a name of the core's).
                var cursor = source.index(after: index)
                while cursor < source.endIndex, source[cursor] != "\"", source[cursor] != "\n" {
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

    @Test("no identifier of the rules, the ledger, the statement or the window names a store")
    func noStoreNames() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count >= 8 && files.contains("Reconciler.swift") && files.contains("StoreStatement.swift"))
        func source(_ file: String) throws -> String { try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8) }
        let declared = Set(try Self.storeNamingFiles.flatMap { Self.identifiers(try source($0)) })
        var named: [String] = []
        for file in files where !Self.storeNamingFiles.contains(file) {
            for word in Self.identifiers(try source(file))
            where !declared.contains(word) && Self.storeWords.contains(where: { word.lowercased().contains($0) }) {
                named.append("\(file): \(word)")
            }
        }
        #expect(named.isEmpty, "store names in the core: \(named)")
    }

    @Test("the check sees names in code and not in comments or text")
    func lintSees() {
        let words = Self.identifiers(
            """
            /// Apple's answer
            let appleFacts = "Google \\"said\\" \\(x)" // google
            /* AppStore */ func decide() {}
            """)
        #expect(words == ["let", "appleFacts", "func", "decide"])
    }
}
