import Foundation

/// The month-end pack: the HTML summary printed to PDF by headless Chromium (Debian's `chromium`), which
/// lays out the page exactly as a browser shows it; the page's print styles keep a table row on one page.
/// Chromium runs without its sandbox (it needs user namespaces a hardened unit or a container denies) on a
/// page clawback wrote itself, whose content security policy forbids loading anything, and with a profile
/// of its own that is deleted afterwards.
public enum PDFPrinter {
    /// The Chromium to run: `$CLAWBACK_CHROMIUM`, else `/usr/bin/chromium`.
    public static var defaultChromium: String { ProcessInfo.processInfo.environment["CLAWBACK_CHROMIUM"] ?? "/usr/bin/chromium" }

    /// Prints the page at `htmlPath` to `pdfPath` (written under a temporary name, renamed once whole).
    public static func print(htmlAt htmlPath: String, to pdfPath: String, chromium: String = defaultChromium) throws(ReportError) {
        guard FileManager.default.isExecutableFile(atPath: chromium) else {
            throw .pdf("no Chromium at \(chromium) to print the PDF with: install Debian's chromium, or set CLAWBACK_CHROMIUM")
        }
        let temporary = pdfPath + ".partial"
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-pdf-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: profile)
            try? FileManager.default.removeItem(atPath: temporary)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromium)
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile.path)", "--no-pdf-header-footer",
            "--print-to-pdf=\(temporary)", URL(fileURLWithPath: htmlPath).absoluteString,
        ]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw .pdf("cannot start \(chromium): \(error)")
        }
        // Chromium's log is read while it runs (a full pipe would stall it); only its end is kept for the error.
        let log = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let size = (try? FileManager.default.attributesOfItem(atPath: temporary)[.size] as? Int) ?? 0
        guard process.terminationStatus == 0, size > 0 else {
            let tail = String(decoding: log.suffix(600), as: UTF8.self)
            throw .pdf("\(chromium) did not print \(htmlPath) (exit \(process.terminationStatus)): \(tail)")
        }
        guard rename(temporary, pdfPath) == 0 else {
            throw .cannotWrite(FileWriteError(path: pdfPath, reason: String(cString: strerror(errno))))
        }
    }
}
