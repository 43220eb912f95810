import Foundation
import Reconciliation
import Reports
import Storage
import TestSupport
import Testing

@Suite("CSV format rules")
struct CSVFormatTests {
    func text(_ writer: CSVWriter) -> String { String(decoding: writer.bytes, as: UTF8.self) }

    @Test("RFC 4180: CRLF after every record, quoting of comma, quote, CR and LF, quotes doubled")
    func rfc4180() throws {
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendHeader(["a", "b"])
        writer.appendRow([.text("plain"), .text("with,comma")])
        writer.appendRow([.text("say \"hi\""), .text("line\nbreak")])
        writer.appendRow([.text("carriage\rreturn"), .empty])
        #expect(text(writer) == "a,b\r\nplain,\"with,comma\"\r\n\"say \"\"hi\"\"\",\"line\nbreak\"\r\n\"carriage\rreturn\",\r\n")
        let parsed = try StrictCSV(writer.bytes)
        #expect(parsed.header == ["a", "b"])
        #expect(parsed.records == [["plain", "with,comma"], ["say \"hi\"", "line\nbreak"], ["carriage\rreturn", ""]])
    }

    @Test("UTF-8, with a byte order mark only when asked for (Excel)")
    func byteOrderMark() throws {
        var plain = CSVWriter(byteOrderMark: false)
        plain.appendRow([.text("joueur-é-日本")])
        #expect(plain.bytes.first == UInt8(ascii: "j"))
        var excel = CSVWriter(byteOrderMark: true)
        excel.appendRow([.text("joueur-é-日本")])
        #expect(Array(excel.bytes.prefix(3)) == [0xEF, 0xBB, 0xBF])
        #expect(Array(excel.bytes.dropFirst(3)) == plain.bytes)
    }

    @Test(
        "the formula guard neutralises =, +, -, @, tab and CR at the start of a text cell, and is reversible",
        arguments: ["=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd", "'quoted", "''twice"])
    func formulaGuard(_ value: String) throws {
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendRow([.text(value)])
        let cell = try #require(try StrictCSV(Array("h\r\n".utf8) + writer.bytes).records.first?.first)
        #expect(cell == "'" + value)
        #expect(FormulaGuard.restore(cell) == value)
    }

    @Test("text that cannot start a formula is left alone, and numbers are never guarded or quoted")
    func unguarded() {
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendRow([.text("a=b"), .text("gems_600"), .number("-5"), .number("1.99"), .integer(Int64(-42))])
        #expect(text(writer) == "a=b,gems_600,-5,1.99,-42\r\n")
        #expect(FormulaGuard.restore("a=b") == "a=b")
    }

    @Test(
        "amounts at the ISO 4217 exponent from integer milliunits",
        arguments: [
            (Int64(990), "USD", "0.99"), (10990, "USD", "10.99"), (1995, "USD", "2.00"), (1994, "USD", "1.99"), (5, "USD", "0.01"),
            (4, "USD", "0.00"), (120_000, "JPY", "120"), (120_500, "JPY", "121"), (120_499, "JPY", "120"), (375, "BHD", "0.375"),
            (1_234_567, "KWD", "1234.567"), (990, "XYZ", "0.990"), (990, nil, "0.990"), (1_500, "CLF", "1.5000"), (0, "EUR", "0.00"),
            (-1995, "USD", "-2.00"), (-4, "USD", "0.00"), (Int64.min, "JPY", "-9223372036854776"),
        ] as [(Int64, String?, String)])
    func money(_ milli: Int64, _ currency: String?, _ expected: String) {
        #expect(Money.format(milli: milli, currency: currency) == expected)
    }

    @Test("exponents: known codes from ISO 4217, unknown ones nil")
    func exponents() {
        #expect(Money.exponent(of: "USD") == 2)
        #expect(Money.exponent(of: "JPY") == 0)
        #expect(Money.exponent(of: "KRW") == 0)
        #expect(Money.exponent(of: "BHD") == 3)
        #expect(Money.exponent(of: "TND") == 3)
        #expect(Money.exponent(of: "XYZ") == nil)
        #expect(Money.exponent(of: "usd") == nil)
    }

    @Test("prorated share of a price and Apple's percentage with three decimals")
    func proratedAmounts() {
        #expect(Money.share(ofMilli: 10990, percentageMilli: 50000) == 5495)
        #expect(Money.share(ofMilli: 990, percentageMilli: 33333) == 330)  // 329.99667 rounds to 330
        #expect(Money.share(ofMilli: 1, percentageMilli: 50000) == 1)  // half rounds up
        #expect(Money.share(ofMilli: 1, percentageMilli: 49999) == 0)
        #expect(Money.share(ofMilli: Int64.max, percentageMilli: 100_000) == nil)
        #expect(Money.percentage(milli: 45000) == "45.000")
        #expect(Money.percentage(milli: 67932) == "67.932")
        #expect(Money.percentage(milli: 100_000) == "100.000")
        #expect(Money.percentage(milli: 5) == "0.005")
    }

    @Test("RFC 3339 UTC timestamps, fraction only when there is one; weeks start on Monday")
    func timestamps() {
        #expect(ReportTimestamp.format(Date(timeIntervalSince1970: 1_791_037_267)) == "2026-10-03T14:21:07Z")
        #expect(ReportTimestamp.format(Date(timeIntervalSince1970: 1_791_037_267.123)) == "2026-10-03T14:21:07.123Z")
        #expect(ReportTimestamp.format(Date(timeIntervalSince1970: 1_791_037_267.5)) == "2026-10-03T14:21:07.5Z")
        #expect(ReportTimestamp.weekStart(Date(timeIntervalSince1970: 1_791_037_267)) == "2026-09-28")  // a Saturday
        #expect(ReportTimestamp.weekStart(Date(timeIntervalSince1970: 1_790_553_600)) == "2026-09-28")  // Monday 00:00
        #expect(ReportTimestamp.weekStart(Date(timeIntervalSince1970: 1_790_553_599)) == "2026-09-21")  // Sunday 23:59:59
    }

    @Test("the detail row: numeric columns bare, text guarded, reason explained, amounts at the exponent")
    func detailRow() throws {
        let purchase = FlaggedPurchase(
            runID: 7, bundleID: "com.studio.game", environment: "Production", transactionID: "2000000001",
            originalTransactionID: "2000000001", playerID: "=cmd|' /C calc'!A0", productID: "gems_600", quantity: 2, unitsGranted: 1200,
            unitsClawedBack: 600, unitsChange: 600, verdict: .refunded, action: .clawbackCreated,
            revocationDate: Date(timeIntervalSince1970: 1_791_037_267), revocationType: "REFUND_PRORATED", revocationReason: 1,
            revocationPercentage: 50000, purchasedAt: Date(timeIntervalSince1970: 1_790_000_000), storePriceMilli: 19980,
            storeCurrency: "USD", storefront: "USA", detail: "REFUND_PRORATED 50.000%: 600 of 1200 units")
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendHeader(DetailReport.columns)
        writer.appendRow(DetailReport.row(purchase, window: "2026-08-01..2026-11-01", asOf: Date()))
        let row = try #require(try StrictCSV(writer.bytes).rows.first)
        #expect(row["player_id"] == "'=cmd|' /C calc'!A0")
        #expect(row["units_change"] == "600")
        #expect(row["refund_percentage"] == "50.000")
        #expect(row["apple_price_informational"] == "19.98")
        #expect(row["refunded_amount_informational"] == "9.99")
        #expect(row["revocation_reason_meaning"] == "actual or perceived issue within the app")
        #expect(row["revocation_date"] == "2026-10-03T14:21:07Z")
        #expect(row["window"] == "2026-08-01..2026-11-01")
        #expect(row["store_price_informational"] == "19.98" && row["store_currency"] == "USD" && row["order_id"] == "")
        #expect(row.count == DetailReport.columns.count)
    }

    @Test(
        "a Google Play row: its order id for the Play Console, its price under the store's columns, and nothing under the Apple-named ones, which hold App Store rows only"
    )
    func googleDetailRow() throws {
        let purchase = FlaggedPurchase(
            runID: 8, bundleID: "com.studio.game", environment: "Production", transactionID: "token-7", originalTransactionID: "token-7",
            playerID: "p-7", productID: "gems_600", unitsGranted: 600, unitsClawedBack: 600, unitsChange: 600, verdict: .refunded,
            action: .clawbackCreated, purchasedAt: Date(timeIntervalSince1970: 1_790_000_000), storePriceMilli: 4_990, storeCurrency: "EUR",
            store: .googlePlay, storeRefundedAmountMilli: 4_990, orderID: "GPA.3300-1234-5678-90123")
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendHeader(DetailReport.columns)
        writer.appendRow(DetailReport.row(purchase, window: "w", asOf: Date()))
        let row = try #require(try StrictCSV(writer.bytes).rows.first)
        #expect(row["order_id"] == "GPA.3300-1234-5678-90123" && row["store"] == "google_play")
        #expect(row["store_currency"] == "EUR" && row["store_price_informational"] == "4.99")
        #expect(row["apple_currency"] == "" && row["apple_price_informational"] == "", "no Google data under Apple's names")
        #expect(row["refunded_amount_informational"] == "4.99")
    }
}
