import Foundation
import Reconciliation
import Reports
import Testing

/// Finance adds up the detail rows and expects the summary's figure: every amount in the summary is the sum
/// of the rounded amounts of the rows it summarizes, in every currency, whatever its decimals.
@Suite("Totals foot")
struct TotalsFootTests {
    @Test("the summary's refunded amount per currency equals the sum of the detail rows' amounts", arguments: ["JPY", "BHD", "USD", "KRW", "XXX"])
    func foot(currency: String) throws {
        var generator = SystemRandomNumberGenerator()
        var totals = ReportTotals()
        var rows: [String] = []
        for index in 0..<400 {
            let prorated = Bool.random(using: &generator)
            let purchase = FlaggedPurchase(
                runID: 1, bundleID: "b", environment: "Production", transactionID: "t\(index)", originalTransactionID: "t\(index)",
                playerID: "p", productID: "gems", unitsGranted: 600, verdict: "refunded", action: "clawback_created",
                revocationType: prorated ? "REFUND_PRORATED" : "REFUND_FULL",
                revocationPercentage: prorated ? Int.random(in: 1...99_999, using: &generator) : nil, purchasedAt: Date(),
                applePriceMilli: Int64.random(in: 1...9_999_999, using: &generator), appleCurrency: currency)
            try totals.add(purchase)
            rows.append(Money.format(milli: try #require(purchase.refundedAmountMilli), currency: currency))
        }
        let summed = rows.map { Decimal(string: $0) ?? .nan }.reduce(Decimal(0), +)
        let summary = Money.format(milli: try #require(totals.byCurrency[currency]).amountMilli, currency: currency)
        #expect(Decimal(string: summary) == summed, "\(currency): summary \(summary), rows add up to \(summed)")
    }
}
