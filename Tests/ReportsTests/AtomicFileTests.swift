import Foundation
import Reconciliation
import Reports
import Storage
import Testing

@Suite("Atomic report files")
struct AtomicFileTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-atomic-\(UUID().uuidString)")

    func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    func leftovers() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tmp") }
    }

    @Test("an existing report is replaced only by a complete one; an abandoned write leaves it and no temporary file")
    func neverHalfOverwritten() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("nested/deeper/report.csv").path
        try AtomicFile.write(Array("old,report\r\n".utf8), to: path)
        #expect(contents(path) == "old,report\r\n")

        do {
            let file = try AtomicFile(path: path)
            try file.write(Array("new,half".utf8))
            #expect(contents(path) == "old,report\r\n")  // the reader still sees the whole old file
        }  // abandoned without commit, as when a report fails half-way
        #expect(contents(path) == "old,report\r\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("nested/deeper").path) == ["report.csv"])

        try AtomicFile.write(Array("new,report\r\n".utf8), to: path)
        #expect(contents(path) == "new,report\r\n")
    }

    @Test("a symbolic link planted at the temporary file's name is never written through")
    func plantedLink() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let victim = directory.appendingPathComponent("victim.txt").path
        try "precious".write(toFile: victim, atomically: true, encoding: .utf8)
        let path = directory.appendingPathComponent("report.csv").path
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent(".report.csv.\(getpid()).tmp").path,
            withDestinationPath: victim)
        try AtomicFile.write(Array("new,report\r\n".utf8), to: path)
        #expect(contents(victim) == "precious")
        #expect(contents(path) == "new,report\r\n")
    }

    @Test("a directory that cannot be made is a clear error naming the path")
    func unwritableDirectory() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let blocker = directory.appendingPathComponent("not-a-directory").path
        try AtomicFile.write(Array("x".utf8), to: blocker)
        #expect {
            try AtomicFile.write(Array("x".utf8), to: blocker + "/report.csv")
        } throws: { error in
            "\(error)".contains("not-a-directory") && "\(error)".contains("exists and is not a directory")
        }
        #expect(try leftovers().isEmpty)
    }
}

extension AtomicFileTests {
    @Test("a temporary file left by a killed writer is removed by the next write of that file; a live writer's is kept")
    func orphansRemoved() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // No process has pid 2^22 + 1 (Linux's pid_max is at most 2^22); pid 1 is always alive.
        let dead = directory.appendingPathComponent(".report.csv.4194305.tmp").path
        let live = directory.appendingPathComponent(".report.csv.1.tmp").path
        let other = directory.appendingPathComponent(".other.csv.4194305.tmp").path
        for path in [dead, live, other] { #expect(FileManager.default.createFile(atPath: path, contents: Data("half".utf8))) }

        try AtomicFile.write(Array("whole\r\n".utf8), to: directory.appendingPathComponent("report.csv").path)
        #expect(try leftovers().sorted() == [".other.csv.4194305.tmp", ".report.csv.1.tmp"])
        #expect(contents(directory.appendingPathComponent("report.csv").path) == "whole\r\n")
    }
}
