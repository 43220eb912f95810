import Foundation
import TestSupport
import Testing

/// `Jobs/local/lib/alone.sh`, which every step of the test command runs under, held to both halves of its
/// promise on a stand-in world: a clone in a home directory beside pyenv's Python, a toolchain and a test
/// server's files (all must stay usable) and a neighbouring checkout (which must stay invisible).
/// Where mount namespaces are unavailable (CLAWBACK_ALONE=off) there is no isolation to check.
@Suite("The test command's isolation (alone.sh)", .enabled(if: ProcessInfo.processInfo.environment["CLAWBACK_ALONE"] != "off"))
struct TestCommandIsolationTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Jobs/local/lib/alone.sh")

    /// A home directory holding a copy of the repository's script in a stand-in clone, and its neighbours.
    struct Home {
        let root: URL
        var home: URL { root.appendingPathComponent("home") }
        var clone: URL { home.appendingPathComponent("clawback") }
        var interpreter: URL { home.appendingPathComponent(".pyenv/versions/3.11.7/bin/python3") }
        var toolchainBin: URL { home.appendingPathComponent(".local/share/swiftly/toolchains/6.3/usr/bin") }
        var serverFiles: URL { home.appendingPathComponent("clawback-pg.test") }
        var neighbour: URL { home.appendingPathComponent("other-checkout") }

        init() throws {
            root = try FileManager.default.url(
                for: .itemReplacementDirectory, in: .userDomainMask, appropriateFor: URL(fileURLWithPath: "/tmp"), create: true)
            let files = FileManager.default
            for directory in [
                clone.appendingPathComponent("Jobs/local/lib"), clone.appendingPathComponent(".build-tools/venv/bin"),
                interpreter.deletingLastPathComponent(), toolchainBin, serverFiles, neighbour,
            ] {
                try files.createDirectory(at: directory, withIntermediateDirectories: true)
            }
            try files.copyItem(at: TestCommandIsolationTests.script, to: clone.appendingPathComponent("Jobs/local/lib/alone.sh"))
            try Data().write(to: clone.appendingPathComponent("Package.swift"))
            try Data().write(to: neighbour.appendingPathComponent("Package.swift"))
            try Data("notes\n".utf8).write(to: home.appendingPathComponent(".notes"))
            try Self.executable(interpreter, printing: "interpreter")
            try Self.executable(toolchainBin.appendingPathComponent("swift"), printing: "toolchain")
            // As `python3 -m venv` makes it: the virtualenv's interpreter is a link into pyenv's.
            try files.createSymbolicLink(at: clone.appendingPathComponent(".build-tools/venv/bin/python"), withDestinationURL: interpreter)
            try Data("home = \(interpreter.deletingLastPathComponent().path)\n".utf8)
                .write(to: clone.appendingPathComponent(".build-tools/venv/pyvenv.cfg"))
        }

        static func executable(_ url: URL, printing word: String) throws {
            try Data("#!/bin/sh\necho \(word)\n".utf8).write(to: url)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        }

        /// Runs `script` (bash) under the clone's alone.sh, from the clone, with the stand-in toolchain first
        /// on PATH and the stand-in server's files as PGHOST.
        func alone(_ script: String, environment: [String: String] = [:]) throws -> CommandResult {
            // Several directories of one entry on PATH, as pyenv's shims and bin are: each entry is kept once.
            let path = [
                toolchainBin.path, home.appendingPathComponent(".pyenv/shims").path, home.appendingPathComponent(".local/bin").path,
                home.appendingPathComponent(".pyenv/bin").path, ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            ].joined(separator: ":")
            let script = [clone.appendingPathComponent("Jobs/local/lib/alone.sh").path, "--", "bash", "-c", script]
            return try CommandRunner.run(
                executable: URL(fileURLWithPath: "/bin/bash"), script,
                environment: ["PATH": path, "PGHOST": serverFiles.path, "LC_ALL": "C"].merging(environment) { $1 },
                removing: ["TMPDIR", "CLAWBACK_TEST_CA_FILE", "CLAWBACK_THROWAWAY_PG_DIR", "PGBIN", "LD_LIBRARY_PATH", "CLAWBACK_ALONE"].filter {
                    environment[$0] == nil
                },
                directory: clone)
        }
    }

    @Test("a clone in a home directory: pyenv's Python through the virtualenv, a toolchain on PATH and the test server's files stay usable")
    func usable() throws {
        let world = try Home()
        defer { try? FileManager.default.removeItem(at: world.root) }
        let run = try world.alone(
            """
            .build-tools/venv/bin/python
            swift
            echo written > "$PGHOST/socket"
            """)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.split(separator: "\n") == ["interpreter", "toolchain"], "\(run.standardError)")
        // Written inside the namespace, the server's file is the real one.
        #expect((try? String(contentsOf: world.serverFiles.appendingPathComponent("socket"), encoding: .utf8)) == "written\n")
    }

    @Test("a neighbouring checkout and other entries beside the clone are invisible inside, and untouched outside")
    func hidden() throws {
        let world = try Home()
        defer { try? FileManager.default.removeItem(at: world.root) }
        let run = try world.alone(
            """
            ls -A ..
            test -e ../other-checkout/Package.swift && echo neighbour-visible
            test -e ../.notes && echo notes-visible
            true
            """)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.split(separator: "\n") == [".local", ".pyenv", "clawback", "clawback-pg.test"], "\(run.standardError)")
        #expect(FileManager.default.fileExists(atPath: world.neighbour.appendingPathComponent("Package.swift").path))
        #expect(FileManager.default.fileExists(atPath: world.home.appendingPathComponent(".notes").path))
    }

    @Test("a clone directly in a world-writable scratch directory (as /tmp): its mode and the server's files inside it are kept")
    func scratchParent() throws {
        let world = try Home()
        defer { try? FileManager.default.removeItem(at: world.root) }
        try FileManager.default.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: world.home.path)
        let run = try world.alone("stat -c %a ..; ls ../clawback-pg.test >/dev/null && echo server-files")
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.split(separator: "\n") == ["1777", "server-files"], "\(run.standardError)")
    }

    @Test("an unknown CLAWBACK_ALONE is refused with usage's status, naming the variable and its values")
    func unknownSetting() throws {
        let world = try Home()
        defer { try? FileManager.default.removeItem(at: world.root) }
        let run = try world.alone("echo ran", environment: ["CLAWBACK_ALONE": "maybe"])
        #expect(run.status == 64)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError.contains("CLAWBACK_ALONE is 'maybe'"))
    }
}
