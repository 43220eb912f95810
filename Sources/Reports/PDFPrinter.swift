import Foundation
import Spawning

/// The month-end pack: the HTML summary printed to PDF by headless Chromium (Debian's `chromium`), which
/// lays out the page exactly as a browser shows it; the page's print styles keep a table row on one page.
///
/// Chromium runs without its sandbox (user namespaces, which containers deny) on a page clawback wrote
/// itself, whose content security policy forbids loading anything; with a throwaway profile, no background
/// networking, extensions, sync or crash reporter, and only `PATH` and `HOME` of clawback's environment
/// (never a database URL). It needs to map executable memory: run `clawback report --pdf` by hand or from a
/// unit without `MemoryDenyWriteExecute` (the shipped units do not ask for a PDF).
public enum PDFPrinter {
    /// The Chromium to run: `$CLAWBACK_CHROMIUM`, else `/usr/bin/chromium`.
    public static var defaultChromium: String { ProcessInfo.processInfo.environment["CLAWBACK_CHROMIUM"] ?? "/usr/bin/chromium" }

    /// How long Chromium may take before it is stopped (with every process it started).
    public static let timeoutSeconds = 120

    /// Prints the page at `htmlPath` to `pdfPath`: Chromium writes into its throwaway profile, and the PDF
    /// reaches `pdfPath` through an atomic file (whole or not at all).
    public static func print(htmlAt htmlPath: String, to pdfPath: String, chromium: String = defaultChromium) throws(ReportError) {
        guard FileManager.default.isExecutableFile(atPath: chromium) else {
            throw .pdf("no Chromium at \(chromium) to print the PDF with: install Debian's chromium, or set CLAWBACK_CHROMIUM")
        }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-pdf-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: profile) }
        do {
            try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .pdf("cannot make Chromium's profile directory: \(error)")
        }
        let printed = profile.appendingPathComponent("summary.pdf")
        let log = profile.appendingPathComponent("chromium.log")
        // coreutils' timeout runs Chromium in a process group of its own and stops the whole group.
        let arguments = [
            "/usr/bin/timeout", "--kill-after=10", String(timeoutSeconds), chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
            "--disable-extensions", "--disable-sync", "--disable-breakpad", "--user-data-dir=\(profile.appendingPathComponent("data").path)",
            "--no-pdf-header-footer", "--print-to-pdf=\(printed.path)", URL(fileURLWithPath: htmlPath).absoluteString,
        ]
        let termination: SpawnedChild.Termination
        do {
            // Its log to a file, not a pipe: a helper Chromium leaves behind could hold a pipe open.
            termination = try SpawnedChild(
                arguments, environment: ["PATH=/usr/bin:/bin", "HOME=\(profile.path)"], standardError: .file(log.path)
            ).wait()
        } catch {
            throw .pdf("cannot start \(chromium): \(error)")
        }
        guard termination == .exited(0), let pdf = FileManager.default.contents(atPath: printed.path), pdf.starts(with: Data("%PDF-".utf8))
        else {
            let tail = String(decoding: (FileManager.default.contents(atPath: log.path) ?? Data()).suffix(600), as: UTF8.self)
            let why =
                switch termination {
                // timeout's own: 124 after SIGTERM, 137 when Chromium had to be killed 10 s later.
                case .exited(124), .exited(137): "took longer than \(timeoutSeconds) s"
                default: "\(termination)"
                }
            throw .pdf("\(chromium) did not print \(htmlPath) (\(why)): \(tail)")
        }
        do {
            try AtomicFile.write(Array(pdf), to: pdfPath)
        } catch {
            throw .cannotWrite(error)
        }
    }
}
