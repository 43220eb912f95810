import Foundation

/// A job's end-of-run outcome as JSON: one line under `--log-format json` (so the job's log holds only JSON
/// lines), indented for `--json` at a terminal.
package enum SummaryJSON {
    package static func render(_ outcome: some Encodable, oneLine: Bool) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = oneLine ? [.sortedKeys] : [.sortedKeys, .prettyPrinted]
        return String(decoding: (try? encoder.encode(outcome)) ?? Data(), as: UTF8.self)
    }
}
