import Foundation
import Testing

@testable import Reports

/// PDFPrinter with stand-ins for Chromium (shell scripts given as `chromium:`): what it hands the browser, and
/// what it says when the browser fails. Debian's Chromium itself prints in HTMLSummaryTests.
@Suite("The PDF printer's contract with Chromium")
struct PDFPrinterTests {
    /// Runs `body` with a scratch directory holding a page, and a stand-in Chromium running `script`.
    static func with(_ script: String, _ body: (_ directory: URL, _ chromium: String, _ page: String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-pdf-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let chromium = directory.appendingPathComponent("chromium").path
        try ("#!/bin/sh\n" + script).write(toFile: chromium, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: chromium)
        let page = directory.appendingPathComponent("summary.html").path
        try "<html><body>totals</body></html>".write(toFile: page, atomically: true, encoding: .utf8)
        try body(directory, chromium, page)
    }

    @Test("Chromium gets only PATH and HOME, no input, the page's file URL and a place to print; its PDF reaches the destination whole")
    func printed() throws {
        // What it was given goes to files beside the script; then it prints where --print-to-pdf says.
        let script = #"""
            dir=$(dirname "$0")
            env | grep -Ev '^(PWD|SHLVL|_)=' | sed 's/=.*//' | sort > "$dir/environment"
            readlink /proc/self/fd/0 > "$dir/input"
            for argument in "$@"; do
                case "$argument" in
                --print-to-pdf=*) printf '%%PDF-1.7 stand-in' > "${argument#--print-to-pdf=}" ;;
                file://*) echo "$argument" > "$dir/page" ;;
                esac
            done
            """#
        try Self.with(script) { directory, chromium, page in
            let destination = directory.appendingPathComponent("out/summary.pdf")
            try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            try PDFPrinter.print(htmlAt: page, to: destination.path, chromium: chromium)
            #expect(try String(contentsOf: destination, encoding: .utf8) == "%PDF-1.7 stand-in")
            #expect(try String(contentsOf: directory.appendingPathComponent("environment"), encoding: .utf8) == "HOME\nPATH\n")
            #expect(try String(contentsOf: directory.appendingPathComponent("input"), encoding: .utf8) == "/dev/null\n")
            #expect(
                try String(contentsOf: directory.appendingPathComponent("page"), encoding: .utf8) == URL(fileURLWithPath: page).absoluteString + "\n")
        }
    }

    @Test("a failing Chromium is named with how it ended and the end of its log; nothing reaches the destination")
    func failures() throws {
        for (script, ending) in [
            ("echo 'starting' >&2; echo 'GPU process is not usable. Goodbye.' >&2; exit 3", "(exit 3)"),
            ("echo 'Received signal 11' >&2; kill -SEGV $$", "(signal 11)"),
            ("echo 'printed nothing' >&2", "(exit 0)"),
            ("printf 'not a PDF' > \"$(echo \"$@\" | tr ' ' '\\n' | sed -n 's/^--print-to-pdf=//p')\"; echo 'wrote HTML' >&2", "(exit 0)"),
        ] {
            try Self.with(script) { directory, chromium, page in
                let destination = directory.appendingPathComponent("summary.pdf").path
                do {
                    try PDFPrinter.print(htmlAt: page, to: destination, chromium: chromium)
                    Issue.record("\(ending): printed")
                } catch {
                    let said = "\(error)"
                    #expect(said.contains("\(chromium) did not print \(page) \(ending)"), "\(said)")
                    let lastLine = script.components(separatedBy: "echo '").last?.components(separatedBy: "'").first ?? ""
                    #expect(said.contains(lastLine), "the log's tail: \(said)")
                }
                #expect(!FileManager.default.fileExists(atPath: destination))
            }
        }
    }

    @Test("no Chromium where it is looked for: refused before anything starts, naming where and what to do")
    func missing() {
        #expect {
            try PDFPrinter.print(htmlAt: "/nonexistent/summary.html", to: "/nonexistent/summary.pdf", chromium: "/nonexistent/chromium")
        } throws: { error in
            "\(error)".contains("no Chromium at /nonexistent/chromium") && "\(error)".contains("CLAWBACK_CHROMIUM")
        }
    }
}
