import Foundation
import Testing

/// What the release takes from the repository besides the code: `git archive` fills the commit into the files
/// `.gitattributes` marks `export-subst`, so a moved file silently loses it and the release its commit
/// (`clawback --version` then says "development build"; the clean-root test catches that minutes later).
@Suite("The release's inputs")
struct ReleaseSourceTests {
    @Test("every file .gitattributes names exists, and the commit's placeholder is in the one marked export-subst")
    func attributesNameFiles() throws {
        let attributes = try DocumentationTests.read(".gitattributes")
        let lines = attributes.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(!lines.isEmpty)
        for line in lines {
            let path = String(line.split(separator: " ")[0])
            let text = try DocumentationTests.read(path)
            if line.contains("export-subst") { #expect(text.contains("$Format:%H$"), "\(path) holds no placeholder for the commit") }
        }
        #expect(lines.contains { $0.hasPrefix("Sources/Job/Runtime/BuildInfo.swift ") && $0.contains("export-subst") })
    }
}
