import Reconciliation
import Storage

/// The one-page HTML summary finance opens in a browser: headline numbers, refunds per week, by product
/// and by currency, and the purchases needing review. Self-contained (inline CSS and SVG, no script, and a
/// Content-Security-Policy that forbids any network access), so it can be mailed or archived as it is.
public enum HTMLSummary {
    public static func page(_ input: SummaryReport.Input, detailFileName: String) -> String {
        let totals = input.totals
        let counts = input.verdictCounts
        let checked = counts.values.reduce(0, +)
        let refunds = (counts[.refunded] ?? 0) + (counts[.revoked] ?? 0)
        let unverified = counts[.unverified] ?? 0
        let review = counts.filter { $0.key.isUnknownToItsStore || $0.key == .mismatch }.values.reduce(0, +)
        let unfinished = input.runs.filter { $0.status != .succeeded }

        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>clawback \(escape(input.window))</title>
            <style>\(style)</style>
            </head>
            <body>
            <h1>clawback report <span class="window">\(escape(input.window))</span></h1>
            <p class="runs">\(escape(runLine(input.runs)))</p>

            """
        if unverified > 0 || !unfinished.isEmpty {
            html += "<p class=\"warning\" id=\"incomplete\">Incomplete: \(unverified) purchases are not verified yet"
            html += unfinished.isEmpty ? "" : " and \(unfinished.count) of \(input.runs.count) runs did not finish"
            html += ". The next run retries them; these figures will change.</p>\n"
        }
        // Each store's refund feed that does not cover its span, in the store's own words.
        for store in StoreCatalog.descriptions {
            let notCovered = Set(input.runs.filter { $0.strategy.store == store.store }.flatMap(\.voidsNotCovered)).sorted()
            guard !notCovered.isEmpty, let coverage = store.report.coverage else { continue }
            html += "<p class=\"warning\" id=\"\(escape(coverage.key))\">\(escape(store.displayName)): "
            html += escape(coverage.uncoveredNote + notCovered.joined(separator: "; ")) + "</p>\n"
        }
        html += "<section class=\"cards\">\n"
        let movement = totals.movedUnits ?? ReportTotals.Movement()
        html += card("checked", "Purchases checked", checked)
        html += card("refunds", "Refunded or revoked", refunds, note: "purchases; \(counts[.refundReversed] ?? 0) refunds reversed")
        html += card("taken", "Units taken back", movement.takenUnits, note: "by these runs, before any give-back")
        html += card("given", "Units given back", movement.givenUnits, note: "by these runs: reversals and adjustments down")
        html += card("net", "Net units taken back", movement.netUnits, note: "taken back less given back")
        html += card("review", "Needs review", review, note: "unknown to the store or mismatched")
        html += card("unverified", "Unverified", unverified, warn: unverified > 0)
        let takeBacks = totals.byRecovery.values.reduce(into: (recorded: 0, pending: 0)) { sums, figures in
            sums.recorded += figures[.owed]?.count ?? 0
            sums.pending += figures[.pending]?.count ?? 0
        }
        html += card(
            "pending", "Not applied by the game", takeBacks.pending, note: "of \(takeBacks.recorded) take-backs these runs recorded",
            warn: takeBacks.pending > 0)
        html += "</section>\n"

        html += "<h2>Per currency <small>(at each purchase's price, informational: the stores' reports are the books)</small></h2>\n"
        html += boxed(headlineTable(totals))
        html += "<h2>Refunds per week</h2>\n" + boxed(weekChart(totals.byWeek))
        html += "<h2>Refunds by product</h2>\n" + boxed(productChart(totals.byProduct))
        html +=
            "<h2>Refunds by currency <small>(the stores' prices, informational: App Store Connect's and the Play Console's reports are the books)</small></h2>\n"
        html += boxed(currencyTable(totals.byCurrency))
        html +=
            "<h2>By store <small>(refunds, partial refunds, chargebacks and fraud kept apart; amounts at the store's price, informational)</small></h2>\n"
        html += boxed(storeTable(totals.byStore))
        html +=
            "<h2>How fast refunds come back <small>(from the store's refund to the clawback entry and to the game's acknowledgement)</small></h2>\n"
        html += boxed(speedTable(input.speed))
        html += "<h2>Owed and recovered <small>(the game's acknowledgements as recorded at "
        html +=
            "<span id=\"as-of\">\(escape(ReportTimestamp.format(totals.asOf)))</span>; values at each purchase's price, informational)</small></h2>\n"
        html += boxed(recoveryTable(totals.byRecovery))
        html +=
            "<h2>Refund requests <small>(Apple's CONSUMPTION_REQUEST about purchases of the window, the answers and Apple's decisions)</small></h2>\n"
        html += boxed(RefundRequestReport.htmlTable(input.refundRequests))
        html +=
            "<h2>Chargeback reviews <small>(Google Play's chargebacks about purchases of the window, the answers and their outcome)</small></h2>\n"
        html += boxed(ChargebackReviewReport.htmlTable(input.chargebackReviews))
        for part in input.storeParts {
            html += "<h2>\(escape(part.title)) <small>(\(escape(part.note)))</small></h2>\n"
            html += boxed(part.contents.html)
        }
        html += "<h2>Needs review</h2>\n" + boxed(reviewTable(totals, detailFileName: detailFileName))
        html += "<footer>Every flagged purchase is in <code>\(escape(detailFileName))</code>.</footer>\n</body>\n</html>\n"
        return html
    }

    static let style = """
        body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;margin:2rem auto;max-width:1100px;padding:0 1.5rem}
        h1{font-size:1.6rem;margin:0 0 .2rem}h1 .window{color:#5a6270;font-weight:400}h2{font-size:1.15rem;margin:2rem 0 .6rem}
        h2 small{font-weight:400;color:#5a6270;font-size:.8rem}.runs{color:#5a6270;margin:0 0 1rem}
        .warning{background:#fff4e5;border-left:4px solid #e8890c;padding:.6rem .9rem}
        .cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:.8rem}
        .card{border:1px solid #d9dde3;border-radius:8px;padding:.7rem .9rem}.card .value{font-size:1.8rem;font-weight:600}
        .card .label{color:#5a6270}.card .note{font-size:.8rem;color:#5a6270}.card.warn{border-color:#e8890c;background:#fff4e5}
        table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #e6e9ee;white-space:nowrap}td.text{white-space:normal}
        td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.85rem}
        svg text{font:12px system-ui,sans-serif;fill:#1d2330}.empty{color:#5a6270}footer{margin-top:2rem;color:#5a6270}
        .box{overflow-x:auto;max-width:100%}.box th:first-child,.box td:first-child{position:sticky;left:0;background:#fff}
        h1,.runs,footer{overflow-wrap:anywhere}
        @media print{.box{overflow:visible}.box th:first-child,.box td:first-child{position:static}tr{break-inside:avoid}}
        """

    /// A chart or table in a box of its own that scrolls sideways when it is wider than the page (a long
    /// window's weeks, the recovery section's fourteen columns), so the page itself never does: at a laptop's
    /// 1280 px nothing is off screen. Its first column (the row's key) stays in view while the rest scrolls.
    static func boxed(_ html: String) -> String {
        "<div class=\"box\">\n" + html + "</div>\n"
    }

    static func runLine(_ runs: [ReportRun]) -> String {
        let described = runs.map { run in
            var text = "run \(run.runID) \(run.status.rawValue)"
            if run.shardCount > 1 { text += " (shard \(run.shardIndex)/\(run.shardCount))" }
            if run.dryRun { text += " (dry run)" }
            return text
        }
        return described.joined(separator: ", ")
    }

    static func card(_ id: String, _ label: String, _ value: some BinaryInteger, note: String? = nil, warn: Bool = false) -> String {
        "<div class=\"card\(warn ? " warn" : "")\" id=\"\(id)\"><div class=\"value\">\(value)</div><div class=\"label\">\(escape(label))</div>"
            + (note.map { "<div class=\"note\">\(escape($0))</div>" } ?? "") + "</div>\n"
    }

    static func weekChart(_ weeks: [Int64: ReportTotals.Tally]) -> String {
        guard let first = weeks.keys.min(), let last = weeks.keys.max() else { return "<p class=\"empty\">No refunds.</p>\n" }
        // Every week from the first refund to the last, quiet weeks included, so the axis is honest (unless
        // stray dates spread them over years: then the weeks with refunds only).
        let keys = (last - first) / 7 <= 120 ? Array(stride(from: first, through: last, by: 7)) : weeks.keys.sorted()
        let maximum = max(1, keys.compactMap { weeks[$0]?.count }.max() ?? 1)
        let barWidth = 34
        let gap = 10
        let height = 160
        let top = 18
        let bottom = 40
        let width = keys.count * (barWidth + gap) + gap
        var svg =
            "<svg role=\"img\" aria-label=\"Refunds per week\" width=\"\(width)\" height=\"\(height + top + bottom)\" viewBox=\"0 0 \(width) \(height + top + bottom)\">\n"
        for (index, key) in keys.enumerated() {
            let count = weeks[key]?.count ?? 0
            let barHeight = max(1, count * height / maximum)
            let x = gap + index * (barWidth + gap)
            let y = top + height - barHeight
            let label = ReportTimestamp.day(key)
            svg +=
                "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(barWidth)\" height=\"\(count == 0 ? 0 : barHeight)\" fill=\"#3b6fd8\"><title>week of \(label): \(count)</title></rect>"
            svg += "<text x=\"\(x + barWidth / 2)\" y=\"\(y - 4)\" text-anchor=\"middle\">\(count)</text>"
            svg += "<text x=\"\(x + barWidth / 2)\" y=\"\(top + height + 14)\" text-anchor=\"middle\">\(label.dropFirst(5))</text>\n"
        }
        return svg + "</svg>\n"
    }

    static func productChart(_ products: [ReportTotals.ProductKey: ReportTotals.Tally]) -> String {
        guard !products.isEmpty else { return "<p class=\"empty\">No refunds.</p>\n" }
        let keys = products.keys.sorted()
        let maximum = max(1, keys.compactMap { products[$0]?.count }.max() ?? 1)
        var table =
            "<table><thead><tr><th>Product</th><th>App</th><th class=\"num\">Refunds</th><th class=\"num\">Units taken back</th><th></th></tr></thead><tbody>\n"
        for key in keys {
            let tally = products[key] ?? ReportTotals.Tally()
            let width = max(1, tally.count * 200 / maximum)
            table +=
                "<tr><td>\(escape(key.productID))</td><td>\(escape(key.bundleID))</td><td class=\"num\">\(tally.count)</td><td class=\"num\">\(tally.units)</td>"
            table += "<td><svg width=\"200\" height=\"12\"><rect width=\"\(width)\" height=\"12\" fill=\"#3b6fd8\"/></svg></td></tr>\n"
        }
        return table + "</tbody></table>\n"
    }

    static func currencyTable(_ currencies: [String: ReportTotals.CurrencyTally]) -> String {
        guard !currencies.isEmpty else { return "<p class=\"empty\">No refunds.</p>\n" }
        var table =
            "<table><thead><tr><th>Currency</th><th class=\"num\">Refunds</th><th class=\"num\">Amount</th><th class=\"num\">New this run</th><th class=\"num\">New amount</th></tr></thead><tbody>\n"
        for code in currencies.keys.sorted() {
            let tally = currencies[code] ?? ReportTotals.CurrencyTally()
            let known = !code.isEmpty
            table += "<tr><td>\(known ? escape(code) : "no price from the store")</td><td class=\"num\">\(tally.refunds)</td>"
            table += "<td class=\"num\">\(known ? Money.format(milli: tally.amountMilli, currency: code) : "")</td>"
            table +=
                "<td class=\"num\">\(tally.newRefunds)</td><td class=\"num\">\(known ? Money.format(milli: tally.newAmountMilli, currency: code) : "")</td></tr>\n"
        }
        return table + "</tbody></table>\n"
    }

    /// What finance asks first, per currency: value taken back, given back and net by these runs, and of the
    /// take-backs they recorded, what the game recovered (in full or in part) and what is still pending.
    static func headlineTable(_ totals: ReportTotals) -> String {
        let recovery = totals.recoveryByCurrency
        let currencies = Set(totals.byMovement.keys).union(recovery.keys).filter { !$0.isEmpty }.sorted()
        guard !currencies.isEmpty else { return "<p class=\"empty\" id=\"headline\">Nothing taken back or given back.</p>\n" }
        var table = "<table id=\"headline\"><thead><tr><th>Currency</th>"
        for title in ["Taken back", "Given back", "Net", "Owed", "Recovered", "Still pending"] { table += "<th class=\"num\">\(title)</th>" }
        table += "</tr></thead><tbody>\n"
        for code in currencies {
            let movement = totals.byMovement[code] ?? ReportTotals.Movement()
            let figures = recovery[code] ?? [:]
            let recovered = (figures[.recovered]?.amountMilli ?? 0) + (figures[.partial]?.amountMilli ?? 0)
            let cells: [Int64] = [
                movement.takenMilli, movement.givenMilli, movement.netMilli, figures[.owed]?.amountMilli ?? 0, recovered,
                figures[.pending]?.amountMilli ?? 0,
            ]
            table += "<tr data-currency=\"\(escape(code))\"><td>\(escape(code))</td>"
            for value in cells { table += "<td class=\"num\">\(Money.format(milli: value, currency: code))</td>" }
            table += "</tr>\n"
        }
        return table + "</tbody></table>\n"
    }

    static func storeTable(_ stores: [ReportTotals.StoreKey: ReportTotals.Figure]) -> String {
        guard !stores.isEmpty else { return "<p class=\"empty\" id=\"stores\">Nothing flagged.</p>\n" }
        var table =
            "<table id=\"stores\"><thead><tr><th>Store</th><th>Kind</th><th>Currency</th><th class=\"num\">Purchases</th><th class=\"num\">Units moved</th><th class=\"num\">Amount</th></tr></thead><tbody>\n"
        for key in stores.keys.sorted() {
            let figure = stores[key] ?? ReportTotals.Figure()
            let priced = !key.currency.isEmpty && key.kind.isRefund
            table += "<tr><td>\(escape(key.store.displayName))</td><td>\(escape(key.kind.label))</td><td>\(escape(key.currency))</td>"
            table += "<td class=\"num\">\(figure.count)</td><td class=\"num\">\(figure.units)</td>"
            table += "<td class=\"num\">\(priced ? Money.format(milli: figure.amountMilli, currency: key.currency) : "")</td></tr>\n"
        }
        return table + "</tbody></table>\n"
    }

    static func speedTable(_ speeds: [RecoverySpeed]) -> String {
        let measured = speeds.filter { $0.refunds > 0 || $0.unitsOwed > 0 }
        guard !measured.isEmpty else { return "<p class=\"empty\" id=\"speed\">These runs took nothing back.</p>\n" }
        func hours(_ seconds: Double?) -> String { seconds.map { String(format: "%.1f h", $0 / 3_600) } ?? "" }
        var table = "<table id=\"speed\"><thead><tr><th>Store</th><th class=\"num\">Refunds</th>"
        table += "<th class=\"num\">To the ledger, median</th><th class=\"num\">p99</th><th class=\"num\">Acknowledged</th>"
        table += "<th class=\"num\">To the game, median</th><th class=\"num\">p99</th><th class=\"num\">Units recovered</th></tr></thead><tbody>\n"
        for speed in measured {
            let share = speed.unitsOwed > 0 ? String(format: "%.1f%%", Double(speed.unitsRecovered) * 100 / Double(speed.unitsOwed)) : ""
            table += "<tr><td>\(escape(speed.store.displayName))</td><td class=\"num\">\(speed.refunds)</td>"
            table += "<td class=\"num\">\(hours(speed.toLedgerMedian))</td><td class=\"num\">\(hours(speed.toLedgerP99))</td>"
            table += "<td class=\"num\">\(speed.acknowledged)</td><td class=\"num\">\(hours(speed.toAcknowledgementMedian))</td>"
            table += "<td class=\"num\">\(hours(speed.toAcknowledgementP99))</td><td class=\"num\">\(share)</td></tr>\n"
        }
        return table + "</tbody></table>\n"
    }

    static func recoveryTable(_ recovery: [ReportTotals.RecoveryKey: [RecoveryFigure: ReportTotals.Figure]]) -> String {
        guard !recovery.isEmpty else { return "<p class=\"empty\" id=\"recovery\">These runs recorded nothing for the game to apply.</p>\n" }
        let columns: [(RecoveryFigure, String)] = [
            (.owed, "Owed"), (.recovered, "Recovered"), (.partial, "Partial"), (.waived, "Waived"), (.superseded, "Superseded"),
            (.pending, "Pending"), (.pendingUpTo7Days, "&le; 7 days"), (.pending8To30Days, "8&ndash;30 days"),
            (.pendingOver30Days, "&gt; 30 days"), (.giveBackOwed, "Give-backs"), (.givenBack, "Given back"),
        ]
        var table = "<table id=\"recovery\"><thead><tr><th>Product</th><th>App</th><th>Currency</th>"
        for (_, title) in columns { table += "<th class=\"num\">\(title)</th>" }
        table += "</tr></thead><tbody>\n"
        for key in recovery.keys.sorted() {
            let figures = recovery[key] ?? [:]
            table += "<tr><td>\(escape(key.productID))</td><td>\(escape(key.bundleID))</td>"
            table += "<td>\(key.currency.isEmpty ? "no price from the store" : escape(key.currency))</td>"
            for (figure, _) in columns {
                guard let tally = figures[figure], tally.count > 0 else {
                    table += "<td class=\"num\"></td>"
                    continue
                }
                let amount = key.currency.isEmpty ? "" : "<br><small>\(Money.format(milli: tally.amountMilli, currency: key.currency))</small>"
                table += "<td class=\"num\" title=\"\(tally.units) units\">\(tally.count)\(amount)</td>"
            }
            table += "</tr>\n"
        }
        return table + "</tbody></table>\n"
    }

    static func reviewTable(_ totals: ReportTotals, detailFileName: String) -> String {
        guard totals.reviewCount > 0 else { return "<p class=\"empty\" id=\"review-list\">Nothing needs review.</p>\n" }
        var table =
            "<table id=\"review-list\"><thead><tr><th>Transaction</th><th>Player</th><th>Product</th><th>Verdict</th><th>Detail</th></tr></thead><tbody>\n"
        for purchase in totals.review {
            table += "<tr><td>\(escape(purchase.transactionID))</td><td>\(escape(purchase.playerID))</td><td>\(escape(purchase.productID))</td>"
            table += "<td>\(escape(purchase.verdict.rawValue))</td><td class=\"text\">\(escape(purchase.detail ?? ""))</td></tr>\n"
        }
        table += "</tbody></table>\n"
        if totals.reviewCount > totals.review.count {
            table += "<p>and \(totals.reviewCount - totals.review.count) more in <code>\(escape(detailFileName))</code>.</p>\n"
        }
        return table
    }

    /// Text as HTML: the five characters that could open markup or end an attribute are escaped. Scalar by
    /// scalar, not by Character: a quote followed by a combining mark is one Character that equals no quote,
    /// yet the browser still sees the quote.
    public static func escape(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result.append(contentsOf: "&amp;".unicodeScalars)
            case "<": result.append(contentsOf: "&lt;".unicodeScalars)
            case ">": result.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": result.append(contentsOf: "&quot;".unicodeScalars)
            case "'": result.append(contentsOf: "&#39;".unicodeScalars)
            default: result.append(scalar)
            }
        }
        return String(result)
    }
}
