import Foundation
import FuzzTargets
import TestSupport
import Testing

/// Every input the fuzzers ever found interesting enough to keep (Tests/FuzzCorpus/<target>/, crashers
/// included once fixed), plus Apple's vectors as seeds, replayed through the same targets: a crash here
/// is a regression.
@Suite("Fuzz corpus replay")
struct FuzzRegressionTests {
    static var corpus: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("FuzzCorpus")
    }

    static func files(in directory: URL) -> [URL] {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: directory.path)) ?? []
        return names.map { directory.appendingPathComponent($0) }.filter { url in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }

    /// Apple's vectors that seed each target.
    static func seeds(_ target: String) throws -> [URL] {
        let vectors = try AppleVectors.directory()
        let all = files(in: vectors)
        switch target {
        case "jws": return all.filter { $0.pathExtension == "jws" || $0.path.contains("/mock/") || $0.path.contains("/xcode/xcode-signed") }
        case "receipt": return all.filter { $0.path.contains("receipt") }
        case "apple-json": return all.filter { $0.pathExtension == "json" }
        default: return []
        }
    }

    @Test("kept inputs and Apple's vectors go through every target without a crash or a broken promise", arguments: FuzzTargets.names)
    func replay(target: String) async throws {
        let inputs =
            Self.files(in: Self.corpus.appendingPathComponent(target)).filter { $0.lastPathComponent != ".gitkeep" } + (try Self.seeds(target))
        #expect(!inputs.isEmpty, "no inputs for \(target)")
        for input in inputs {
            await FuzzTargets.run(target, Array(try Data(contentsOf: input)))
        }
    }
}
