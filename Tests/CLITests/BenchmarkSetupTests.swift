import Foundation
import TestSupport
import Testing

/// `bash Jobs/local/benchmark.sh` on a machine where only the demo ran installs what it starts, as the Quick
/// start's commands do: every program its driver runs by name belongs to a Debian package the script
/// installs, or to one of their dependencies (dpkg and apt-cache say which).
@Suite("The benchmark's set-up")
struct BenchmarkSetupTests {
    @Test("every program bench.py starts by name comes with a package benchmark.sh ensures")
    func programsComeWithTheirPackages() throws {
        let root = DocumentationTests.root
        let driver = try String(contentsOf: root.appendingPathComponent("Jobs/local/benchmark/bench.py"), encoding: .utf8)
        let started = Set(
            driver.matches(of: /subprocess\.(?:run|Popen|check_output)\(\[\s*"([a-z][a-z0-9_-]*)"/).map { String($0.output.1) })
        #expect(started.isSuperset(of: ["nginx", "openssl", "psql"]), "\(started)")
        // The packages benchmark.sh passes to ensure_packages, as bash expands them.
        let listed = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/bin/bash"),
            [
                "-c",
                """
                source Jobs/local/lib/packages.sh
                eval "set -- $(sed -n 's/^ensure_packages //p' Jobs/local/benchmark.sh)"
                printf '%s\\n' "$@"
                """,
            ], directory: root)
        try #require(listed.status == 0, "\(listed.standardError)")
        let packages = listed.standardOutput.split(separator: "\n").map(String.init)
        let closure = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/apt-cache"),
            [
                "depends", "--recurse", "--installed", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                "--no-enhances",
            ]
                + packages)
        let installed = Set(closure.standardOutput.split(separator: "\n").filter { !$0.hasPrefix(" ") }.map(String.init))
        for program in started.sorted() {
            let path = try CommandRunner.run(executable: URL(fileURLWithPath: "/bin/bash"), ["-c", "readlink -f \"$(command -v \(program))\""])
            let owner = try CommandRunner.run(
                executable: URL(fileURLWithPath: "/usr/bin/dpkg-query"), ["-S", path.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)])
            let package = String(owner.standardOutput.split(separator: ":").first ?? "")
            #expect(owner.status == 0 && installed.contains(package), "\(program) (package \(package)) is not among what benchmark.sh installs")
        }
    }
}
