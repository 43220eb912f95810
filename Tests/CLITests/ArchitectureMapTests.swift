import Foundation
import TestSupport
import Testing

/// architecture.md's module table says which first-party targets each module depends on: held here to what
/// `Package.swift` declares (as SwiftPM reads it), every target in the table and every row true.
@Suite("The architecture's module map")
struct ArchitectureMapTests {
    @Test("architecture.md's module table lists every target but the tests, with exactly its first-party dependencies")
    func moduleTable() throws {
        let declared = try Self.declaredTargets()
        let documented = try Self.documentedTable()
        let expected = declared.filter { $0.value.kind != "test" }.mapValues(\.dependencies)
        #expect(Set(documented.keys) == Set(expected.keys), "targets in the table but not Package.swift, or the other way round")
        for (target, dependencies) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(documented[target] == dependencies, "\(target): the table says \(documented[target] ?? []), Package.swift \(dependencies)")
        }
    }

    /// Package.swift's targets: kind and first-party dependencies (products of other packages left out).
    static func declaredTargets() throws -> [String: (kind: String, dependencies: Set<String>)] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dump-package-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        // A scratch path of its own: the running `swift test` holds .build's lock.
        let dumped = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            ["swift", "package", "dump-package", "--package-path", DocumentationTests.root.path, "--scratch-path", scratch.path])
        try #require(dumped.status == 0, "\(dumped.standardError)")
        let package = try #require(try JSONSerialization.jsonObject(with: Data(dumped.standardOutput.utf8)) as? [String: Any])
        let targets = try #require(package["targets"] as? [[String: Any]])
        let names = Set(targets.compactMap { $0["name"] as? String })
        var declared: [String: (kind: String, dependencies: Set<String>)] = [:]
        for target in targets {
            let name = try #require(target["name"] as? String)
            let dependencies = (target["dependencies"] as? [[String: [Any]]] ?? []).compactMap { $0.values.first?.first as? String }
            declared[name] = (target["type"] as? String ?? "", Set(dependencies.filter(names.contains)))
        }
        return declared
    }

    /// The rows of the table under "## Modules and data flow": module → the modules in its "depends on" cell.
    static func documentedTable() throws -> [String: Set<String>] {
        let text = try DocumentationTests.read("docs/architecture.md")
        let section = try #require(text.components(separatedBy: "## Modules and data flow").dropFirst().first?.components(separatedBy: "\n## ").first)
        var table: [String: Set<String>] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 3 else { continue }
            let module = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let dependencies = cells[2].split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }
            table[module] = Set(dependencies.filter { $0 != "—" && !$0.isEmpty })
        }
        return table
    }
}
