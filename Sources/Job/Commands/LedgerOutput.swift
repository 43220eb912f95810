import Foundation
import Reconciliation
import Reports
import Storage

/// The ledger commands' output: a table for people, JSON for scripts, CSV for spreadsheets.
enum LedgerOutput {
    static let columns = [
        "entry_id", "transaction_id", "kind", "units", "reverses_entry_id", "player_id", "product_id", "created_at", "outcome",
        "units_applied", "acknowledged_by", "acknowledged_at", "note",
    ]

    static func cells(_ entry: StaffLedger.Entry) -> [String?] {
        [
            String(entry.entryID), entry.transactionID, entry.kind.rawValue, String(entry.units), entry.reversesEntryID.map(String.init),
            entry.playerID, entry.productID, DatabaseTimestamp.format(entry.createdAt),
            entry.outcome?.rawValue ?? (entry.kind == .review ? nil : "pending"),
            entry.unitsApplied.map(String.init), entry.acknowledgedBy, entry.acknowledgedAt.map(DatabaseTimestamp.format), entry.note,
        ]
    }

    static func table(_ entries: [StaffLedger.Entry]) -> String {
        let shown = ["entry", "transaction", "kind", "units", "player", "product", "outcome", "applied", "by"]
        return TextTable.render(
            [shown]
                + entries.map { entry in
                    let cells = cells(entry)
                    return [0, 1, 2, 3, 5, 6, 8, 9, 10].map { cells[$0] ?? "" }
                })
    }

    static func json(_ entries: [StaffLedger.Entry]) -> String {
        let objects: [[String: Any]] = entries.map { entry in
            var object: [String: Any] = [:]
            for (name, value) in zip(columns, cells(entry)) { object[name] = value ?? NSNull() }
            object["units"] = entry.units
            object["entry_id"] = entry.entryID
            object["units_applied"] = entry.unitsApplied ?? NSNull()
            return object
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func csv(_ entries: [StaffLedger.Entry]) -> String {
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendHeader(columns)
        for entry in entries { writer.appendRow(cells(entry).map(CSVField.optionalText)) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
