import Foundation
import Reconciliation
import Reports
import Storage
import Testing

/// Finance adds up the detail rows and expects the summary's figure: every amount in the summary is the sum
/// of the rounded amounts of the rows it summarizes, in every currency, whatever its decimals.
@Suite("Totals foot")
struct TotalsFootTests {
    @Test("the summary's refunded amount per currency equals the sum of the detail rows' amounts", arguments: ["JPY", "BHD", "USD", "KRW", "XXX"])
    func foot(currency: String) throws {
        var generator = SystemRandomNumberGenerator()
        var totals = ReportTotals(asOf: Date())
        var rows: [String] = []
        for index in 0..<400 {
            let prorated = Bool.random(using: &generator)
            let purchase = FlaggedPurchase(
                runID: 1, bundleID: "b", environment: "Production", transactionID: "t\(index)", originalTransactionID: "t\(index)",
                playerID: "p", productID: "gems", unitsGranted: 600, verdict: .refunded, action: .clawbackCreated,
                revocationType: prorated ? "REFUND_PRORATED" : "REFUND_FULL",
                revocationPercentage: prorated ? Int.random(in: 1...99_999, using: &generator) : nil, purchasedAt: Date(),
                storePriceMilli: Int64.random(in: 1...9_999_999, using: &generator), storeCurrency: currency)
            try totals.add(purchase)
            rows.append(Money.format(milli: try #require(purchase.refundedAmountMilli), currency: currency))
        }
        let summed = rows.map { Decimal(string: $0) ?? .nan }.reduce(Decimal(0), +)
        let summary = Money.format(milli: try #require(totals.byCurrency[currency]).amountMilli, currency: currency)
        #expect(Decimal(string: summary) == summed, "\(currency): summary \(summary), rows add up to \(summed)")
    }
}

/// The recovery section as finance would check it: a pivot of the detail rows by currency, product and
/// what the row's own columns say (outcome, the sign of entry_units, pending_days), summing the units and
/// amount columns. Every summary figure must be that pivot's, to the last minor unit.
@Suite("Recovery section foots")
struct RecoveryFootTests {
    /// The cell of `column` in a detail (or summary) row; "" for a column the report does not have.
    static func cell(_ row: [String], _ column: String, of columns: [String] = DetailReport.columns) -> String {
        columns.firstIndex(of: column).map { row[$0] } ?? ""
    }

    static func summaryCell(_ row: [String], _ column: String) -> String { cell(row, column, of: SummaryReport.columns) }

    static func text(_ field: CSVField) -> String { field.csvText }

    /// The summary key a detail row falls in for each figure, decided from the row alone.
    static func figures(ofDetail row: [String]) -> [(key: String, applied: Bool)] {
        let outcome = cell(row, "outcome")
        guard !outcome.isEmpty, let units = Int64(cell(row, "entry_units")) else { return [] }
        if units >= 0 {
            switch outcome {
            case "applied": return [("owed", false), ("recovered", true)]
            case "partial": return [("owed", false), ("partial", true)]
            case "pending":
                let days = Int(cell(row, "pending_days")) ?? -1
                let age = days <= 7 ? "pending_0_7_days" : days <= 30 ? "pending_8_30_days" : "pending_over_30_days"
                return [("owed", false), ("pending", false), (age, false)]
            default: return [("owed", false), (outcome, false)]
            }
        }
        switch outcome {
        case "pending": return [("give_back_owed", false), ("give_back_pending", false)]
        case "superseded": return [("give_back_owed", false), ("give_back_superseded", false)]
        default: return [("give_back_owed", false), ("given_back", true)]
        }
    }

    @Test("every recovery figure is the sum of the detail rows it summarizes, in JPY, BHD, USD, KRW and an unknown code")
    func foot() throws {
        var generator = SystemRandomNumberGenerator()
        let asOf = Date(timeIntervalSince1970: 1_795_000_000)
        var totals = ReportTotals(asOf: asOf)
        var details: [[String]] = []
        for index in 0..<2_000 {
            let granted = [60, 600, 1_000, 7][Int.random(in: 0..<4, using: &generator)] as Int64
            let takeBack = Int.random(in: 0..<5, using: &generator) > 0
            let units = takeBack ? Int64.random(in: 0...granted, using: &generator) : -Int64.random(in: 1...granted, using: &generator)
            let outcomes: [String?] = takeBack ? [nil, "applied", "partial", "waived", "superseded"] : [nil, "applied", "superseded"]
            let outcome = outcomes[Int.random(in: 0..<outcomes.count, using: &generator)]
            let applied: Int64? =
                switch outcome {
                case nil: nil
                case "applied": takeBack ? units : -Int64.random(in: 0...(-units), using: &generator)
                case "partial": units == 0 ? 0 : Int64.random(in: 0..<units, using: &generator)
                default: 0
                }
            let position = LedgerPosition(
                entryID: Int64(index), units: units, createdAt: asOf - Double.random(in: 0...(60 * 86_400), using: &generator),
                outcome: outcome.flatMap(AcknowledgementOutcome.init(rawValue:)), unitsApplied: applied, acknowledgedAt: outcome == nil ? nil : asOf)
            let purchase = FlaggedPurchase(
                runID: 1, bundleID: "b", environment: "Production", transactionID: "t\(index)", originalTransactionID: "t\(index)",
                playerID: "p", productID: ["gems_60", "gems_600", "coins"][index % 3], unitsGranted: granted,
                verdict: takeBack ? .refunded : .refundReversed, action: .clawbackCreated, purchasedAt: asOf,
                storePriceMilli: index % 17 == 0 ? nil : Int64.random(in: 1...9_999_999, using: &generator),
                storeCurrency: index % 17 == 0 ? nil : ["JPY", "BHD", "USD", "KRW", "XXX"][index % 5], position: position)
            try totals.add(purchase)
            details.append(DetailReport.row(purchase, window: "w", asOf: asOf).map(Self.text))
        }
        let input = SummaryReport.Input(window: "w", runs: [], verdictCounts: [:], ledgerEntries: 0, totals: totals)
        let recovery = SummaryReport.rows(input).map { $0.map(Self.text) }.filter { Self.summaryCell($0, "section") == "recovery" }
        #expect(recovery.count > 100)
        var pivot: [String: (count: Int, units: Int64, amount: Decimal)] = [:]
        for row in details {
            for (key, applied) in Self.figures(ofDetail: row) {
                let group = [Self.cell(row, "apple_currency"), Self.cell(row, "product_id"), key].joined(separator: "|")
                guard let units = Int64(Self.cell(row, applied ? "units_applied" : "entry_units")) else {
                    Issue.record("a detail row counted in \(key) shows no units: \(row)")
                    continue
                }
                let amount = Decimal(string: Self.cell(row, applied ? "recovered_amount_informational" : "entry_amount_informational")) ?? 0
                let sum = pivot[group] ?? (0, 0, 0)
                pivot[group] = (sum.count + 1, sum.units + units, sum.amount + amount)
            }
        }
        var seen = Set<String>()
        for row in recovery {
            let group = [Self.summaryCell(row, "currency"), Self.summaryCell(row, "product_id"), Self.summaryCell(row, "key")]
                .joined(separator: "|")
            seen.insert(group)
            let expected = pivot[group] ?? (0, 0, 0)
            #expect(Int(Self.summaryCell(row, "count")) == expected.count, "\(group)")
            #expect(Int64(Self.summaryCell(row, "units")) == expected.units, "\(group)")
            let amount = Self.summaryCell(row, "amount_informational")
            if Self.summaryCell(row, "currency").isEmpty {
                #expect(amount.isEmpty, "\(group)")
            } else {
                #expect(Decimal(string: amount) == expected.amount, "\(group): summary \(amount), rows \(expected.amount)")
            }
        }
        // Every group of the pivot has its summary row.
        #expect(Set(pivot.keys).subtracting(seen).isEmpty, "\(Set(pivot.keys).subtracting(seen).sorted().prefix(5))")
    }
}
