import Foundation
public import Reconciliation
public import Storage

/// The summary CSV: the report's figures as one table of fixed columns (RFC 4180 wants every row the same
/// width), grouped by `section`:
///   run           one row per run covered: key = run id, count = its checks, note = status, strategy, shard
///   completeness  grants in scope and checked, unverified, each store's requests: is this report the whole story?
///   verdict       every verdict: count of purchases, units = the runs' ledger movement (taken back > 0)
///   currency      refunds by the store's currency, amount informational (App Store Connect reports are the books)
///   movement      per currency ("" without a price): units these runs took back (`taken_back`), gave back
///                 (`given_back`) and the `net`, gross of each other, with their value at each purchase's price
///   store         flagged purchases by store (`store`), kind (key: refund, partial_refund, chargeback, fraud,
///                 family_revoke, refund_reversed, review) and currency: count, units these runs moved, and the
///                 refunded amount at the store's price (informational)
///   product       refunds by product: count and units taken back
///   recovery      the game's side per currency and product (`product_id`): owed, recovered, partial, waived,
///                 superseded, pending and its ages, and the give-backs (keys: `RecoveryFigure`)
///   refund_requests Apple's refund requests about purchases of the window, per app and product (`product_id`): received,
///                 answered (in time), not consented, refused, expired, open, and Apple's decisions; units are
///                 the units granted, or for `declined_by_apple` the units that stayed with the player
public enum SummaryReport {
    public static let columns = [
        "window", "section", "key", "bundle_id", "currency", "count", "units", "amount_informational", "note", "product_id", "store",
    ]

    /// Every verdict's note: the store-neutral ones here, each store's own verdicts' from its description.
    static var verdictNotes: [Verdict: String] {
        var notes: [Verdict: String] = [
            .ok: "the store confirms the purchase stands",
            .refunded: "the store refunded it (in full or in part): units taken back",
            .revoked: "the store revoked it (the App Store: Family Sharing): units taken back",
            .refundReversed: "the store reversed an earlier refund: units given back",
            .unknownToStore: "the store does not know the purchase: review",
            .mismatch: "the store's statement disagrees with the grant, or needs a person: review",
            .unverified: "no verified answer from the store: retried by the next run",
        ]
        for store in StoreCatalog.descriptions { notes.merge(store.report.verdictNotes) { _, own in own } }
        return notes
    }

    /// A store's own part of the report (`StoreReportTable`) as read for it.
    public struct StorePart: Sendable {
        public var title: String
        public var note: String
        public var contents: StoreReportTable.Contents
    }

    public struct Input: Sendable {
        public var window: String
        public var runs: [ReportRun]
        /// Verdicts of every purchase checked (ok included), one per transaction.
        public var verdictCounts: [Verdict: Int]
        public var ledgerEntries: Int
        public var totals: ReportTotals
        /// The refund requests about purchases of the window.
        public var refundRequests: [RefundRequestLine]
        /// How fast the refunds these runs took back came back, per store.
        public var speed: [RecoverySpeed]
        /// Google Play's chargeback reviews about purchases of the window.
        public var chargebackReviews: [ChargebackReviewLine]
        /// The stores' own parts of the report, in the order the drivers gave them.
        public var storeParts: [StorePart] = []

        public init(
            window: String, runs: [ReportRun], verdictCounts: [Verdict: Int], ledgerEntries: Int, totals: ReportTotals,
            refundRequests: [RefundRequestLine] = [], speed: [RecoverySpeed] = [], chargebackReviews: [ChargebackReviewLine] = []
        ) {
            self.chargebackReviews = chargebackReviews
            self.window = window
            self.runs = runs
            self.verdictCounts = verdictCounts
            self.ledgerEntries = ledgerEntries
            self.totals = totals
            self.refundRequests = refundRequests
            self.speed = speed
        }
    }

    public static func rows(_ input: Input) -> [[CSVField]] {
        var rows: [[CSVField]] = []
        func row(
            _ section: String, _ key: String, bundle: String? = nil, currency: String? = nil, count: Int? = nil, units: Int64? = nil,
            amount: String? = nil, note: String? = nil, product: String? = nil, store: Store? = nil
        ) {
            rows.append([
                .text(input.window), .text(section), .text(key), .optionalText(bundle), .optionalText(currency),
                count.map { .integer($0) } ?? .empty, units.map { .integer($0) } ?? .empty, amount.map(CSVField.number) ?? .empty,
                .optionalText(note), .optionalText(product), .optionalText(store?.rawValue),
            ])
        }
        for run in input.runs {
            var note =
                "\(run.status.rawValue), strategy \(run.strategy.rawValue), shard \(run.shardIndex)/\(run.shardCount), attempts \(run.attempts)"
            if run.dryRun { note += ", dry run: nothing written to the ledger" }
            if let narrowed = run.narrowedTo { note += ", only \(narrowed)" }
            row("run", String(run.runID), count: run.checks, note: note)
        }
        let checked = input.verdictCounts.values.reduce(0, +)
        let unverified = input.verdictCounts[.unverified] ?? 0
        let notSucceeded = input.runs.filter { $0.status != .succeeded }.count
        row(
            "completeness", "grants_in_scope", count: input.runs.reduce(0) { $0 + $1.grantsInScope },
            note: "grants in the window when each run last started")
        row("completeness", "grants_checked", count: checked, note: "purchases with a check (one per transaction)")
        row(
            "completeness", "unverified", count: unverified,
            note: unverified == 0 ? "every purchase has a verified answer" : "not verified yet: the next run retries them")
        row(
            "completeness", "runs_not_succeeded", count: notSucceeded,
            note: notSucceeded == 0 ? "all runs finished" : "rerun the same command to finish")
        // Each store's requests apart, under its own key (the App Store's under the names finance has read
        // since 1.0), for each store a run asked; a summary of no run shows the stores that report without one.
        for store in StoreCatalog.descriptions {
            let runs = input.runs.filter { $0.strategy.store == store.store }
            guard !runs.isEmpty || (input.runs.isEmpty && store.report.requestsWithoutRuns) else { continue }
            let key = store.report.requestsKey
            row(
                "completeness", key + "_requests", count: runs.reduce(0) { $0 + $1.storeRequests }, note: "all attempts of each run",
                store: store.store)
            row(
                "completeness", key + "_rate_limited", count: runs.reduce(0) { $0 + $1.storeRateLimited },
                note: "\(store.report.rateLimitedNote), all attempts of each run", store: store.store)
            // Per app, once: where the store's refund feed could not cover an app's window.
            if let coverage = store.report.coverage, !runs.isEmpty {
                var notCovered: [String] = []
                for run in runs {
                    for app in run.voidsNotCovered where !notCovered.contains(app) { notCovered.append(app) }
                }
                row(
                    "completeness", coverage.key, count: notCovered.count,
                    note: notCovered.isEmpty ? coverage.coveredNote : coverage.uncoveredNote + notCovered.joined(separator: "; "), store: store.store)
            }
        }
        if input.runs.contains(where: { $0.strategy.auditsFeed }) {
            let rejected = input.runs.reduce(0) { $0 + $1.rejectedNotifications }
            row(
                "completeness", "notifications_rejected", count: rejected,
                note: rejected == 0
                    ? "every notification of the refund feed verified"
                    : "failed verification: the grants they may be about were asked per transaction")
            row(
                "completeness", "notifications_missed", count: input.runs.reduce(0) { $0 + $1.missedNotifications },
                note: "refunds the audit sample found that the refund feed did not have")
        }
        row("completeness", "ledger_entries", count: input.ledgerEntries, note: "ledger entries these runs wrote")
        row(
            "completeness", "ledger_as_of", note: "the game's acknowledgements as recorded at \(ReportTimestamp.format(input.totals.asOf))")
        // The verdicts the runs' stores can reach (without a run, any store's), and any verdict with a purchase.
        let runStores = Set(input.runs.map(\.strategy.store))
        let stores = runStores.isEmpty ? Set(StoreCatalog.descriptions.map(\.store)) : runStores
        for verdict in Verdict.allCases where stores.contains(where: verdict.applies(to:)) || input.verdictCounts[verdict] != nil {
            let tally = input.totals.byVerdict[verdict]
            row("verdict", verdict.rawValue, count: input.verdictCounts[verdict] ?? 0, units: tally?.units ?? 0, note: verdictNotes[verdict])
        }
        for currency in input.totals.byCurrency.keys.sorted() {
            guard let tally = input.totals.byCurrency[currency] else { continue }
            if currency.isEmpty {
                row("currency", "refunded", count: tally.refunds, note: "refunds without a price from the store")
                continue
            }
            row(
                "currency", "refunded", currency: currency, count: tally.refunds,
                amount: Money.format(milli: tally.amountMilli, currency: currency), note: "every refund found in the window")
            row(
                "currency", "refunded_new", currency: currency, count: tally.newRefunds,
                amount: Money.format(milli: tally.newAmountMilli, currency: currency), note: "refunds first clawed back by these runs")
        }
        for currency in input.totals.byMovement.keys.sorted() {
            let movement = input.totals.byMovement[currency] ?? ReportTotals.Movement()
            let priced = !currency.isEmpty
            for (key, units, milli, note) in [
                (
                    "taken_back", movement.takenUnits, movement.takenMilli,
                    "units these runs took back (clawbacks, adjustments up), before any give-back"
                ),
                ("given_back", movement.givenUnits, movement.givenMilli, "units these runs gave back (reversals, adjustments down)"),
                ("net", movement.netUnits, movement.netMilli, "taken back less given back"),
            ] {
                row(
                    "movement", key, currency: priced ? currency : nil, units: units,
                    amount: priced ? Money.format(milli: milli, currency: currency) : nil,
                    note: priced ? note : note + "; purchases without a price")
            }
        }
        for key in input.totals.byStore.keys.sorted() {
            let figure = input.totals.byStore[key] ?? ReportTotals.Figure()
            let priced = !key.currency.isEmpty && key.kind.isRefund
            row(
                "store", key.kind.rawValue, currency: key.currency.isEmpty ? nil : key.currency, count: figure.count, units: figure.units,
                amount: priced ? Money.format(milli: figure.amountMilli, currency: key.currency) : nil,
                note: "\(key.store.displayName): \(key.kind.label)", store: key.store)
        }
        for product in input.totals.byProduct.keys.sorted() {
            guard let tally = input.totals.byProduct[product] else { continue }
            row("product", product.productID, bundle: product.bundleID, count: tally.count, units: tally.units)
        }
        for key in input.totals.byRecovery.keys.sorted() {
            let figures = input.totals.byRecovery[key] ?? [:]
            // Every take-back figure once the product has one (zeros included: a table finance can pivot), and the
            // give-back figures when there are give-backs.
            let shown = RecoveryFigure.allCases.filter { figure in
                figure.isGiveBack ? figures[.giveBackOwed] != nil : figures[.owed] != nil
            }
            for figure in shown {
                let tally = figures[figure] ?? ReportTotals.Figure()
                row(
                    "recovery", figure.rawValue, bundle: key.bundleID, currency: key.currency.isEmpty ? nil : key.currency, count: tally.count,
                    units: tally.units, amount: key.currency.isEmpty ? nil : Money.format(milli: tally.amountMilli, currency: key.currency),
                    note: figure.note, product: key.productID)
            }
        }
        for speed in input.speed {
            for (key, count, seconds, note) in [
                ("refund_to_ledger_median_hours", speed.refunds, speed.toLedgerMedian, "hours from the store's refund to its clawback entry, median"),
                ("refund_to_ledger_p99_hours", speed.refunds, speed.toLedgerP99, "the same, 99th percentile"),
                (
                    "refund_to_acknowledgement_median_hours", speed.acknowledged, speed.toAcknowledgementMedian,
                    "hours from the store's refund to the game's acknowledgement, median (the count: refunds acknowledged)"
                ),
                ("refund_to_acknowledgement_p99_hours", speed.acknowledged, speed.toAcknowledgementP99, "the same, 99th percentile"),
            ] {
                row("speed", key, count: count, amount: seconds.map { String(format: "%.1f", $0 / 3_600) }, note: note, store: speed.store)
            }
            row(
                "speed", "units_recovered_percent", units: speed.unitsRecovered,
                amount: speed.unitsOwed > 0 ? String(format: "%.1f", Double(speed.unitsRecovered) * 100 / Double(speed.unitsOwed)) : nil,
                note: "units the game applied of the \(speed.unitsOwed) these runs took back", store: speed.store)
        }
        rows += RefundRequestReport.summaryRows(input.refundRequests, window: input.window)
        rows += ChargebackReviewReport.summaryRows(input.chargebackReviews, window: input.window)
        for part in input.storeParts { rows += part.contents.summaryRows }
        return rows
    }
}
