import Foundation
import Testing

/// The docs are part of the product: the README stays a short front door, every relative link resolves
/// (file and heading), and the exit codes the docs promise are the ones the code returns.
@Suite("Documentation")
struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ path: String) throws -> String { try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) }

    static var documents: [String] {
        func markdown(_ folder: String) -> [String] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)) ?? []
            return names.filter { $0.hasSuffix(".md") }.sorted().map { folder + "/" + $0 }
        }
        return ["README.md"] + markdown("docs") + markdown("docs/setup")
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().unicodeScalars.compactMap { scalar -> Character? in
                if scalar == " " { return "-" }
                if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) { return Character(scalar) }
                return nil
            })
    }

    static func anchors(in text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var result: Set<String> = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle() }
            guard !fenced, line.hasPrefix("#") else { continue }
            let base = anchor(String(line.drop { $0 == "#" }).trimmingCharacters(in: .whitespaces))
            let count = seen[base, default: 0]
            result.insert(count == 0 ? base : "\(base)-\(count)")
            seen[base] = count + 1
        }
        return result
    }

    @Test("the README is a short front door that links every document")
    func readme() throws {
        let readme = try Self.read("README.md")
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 150)
        for document in Self.documents.dropFirst() { #expect(readme.contains("](\(document))"), "the README does not link \(document)") }
        #expect(Self.documents.count >= 8)
    }

    @Test("every relative link in the docs points to a file, and every anchor to a heading, that exist")
    func links() throws {
        let pattern = try Regex(#"\]\(([^)\s]+)\)"#)
        var broken: [String] = []
        for document in Self.documents {
            let text = try Self.read(document)
            let base = URL(fileURLWithPath: document).deletingLastPathComponent().relativePath
            for match in text.matches(of: pattern) {
                let target = String(text[match.output[1].range!])
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("mailto:") { continue }
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = parts[0].isEmpty ? document : (base == "." ? "" : base + "/") + parts[0]
                let path = URL(fileURLWithPath: file, relativeTo: Self.root).standardizedFileURL.path
                guard FileManager.default.fileExists(atPath: path) else {
                    broken.append("\(document): \(target) (no such file)")
                    continue
                }
                if parts.count == 2, path.hasSuffix(".md"),
                    !Self.anchors(in: try String(contentsOfFile: path, encoding: .utf8)).contains(String(parts[1]))
                {
                    broken.append("\(document): \(target) (no such heading)")
                }
            }
        }
        #expect(broken.isEmpty, "\(broken)")
    }

    @Test("the documented exit codes are the code's, in one table")
    func exitCodes() throws {
        let source = try Self.read("Sources/Job/Runtime/ExitStatus.swift")
        let inCode = Set(source.matches(of: try Regex(#"case \w+ = (\d+)"#)).compactMap { Int(source[$0.output[1].range!]) })
        #expect(inCode.count >= 10)
        let operations = try Self.read("docs/operations.md")
        let section =
            try #require(operations.components(separatedBy: "\n## Exit codes\n").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        let row = try Regex(#"(?m)^\| (\d+) \|"#)
        let documented = section.matches(of: row).compactMap { Int(section[$0.output[1].range!]) }
        #expect(Set(documented) == inCode, "documented \(documented.sorted()), code \(inCode.sorted())")
        #expect(documented.count == Set(documented).count, "a code is documented twice")
        // One table: no other document has rows of exit codes.
        for document in Self.documents where document != "docs/operations.md" {
            let text = try Self.read(document)
            let rows = text.matches(of: row).compactMap { Int(text[$0.output[1].range!]) }.filter(inCode.contains)
            #expect(rows.count < 3, "\(document) has an exit-code table")
        }
    }
}
