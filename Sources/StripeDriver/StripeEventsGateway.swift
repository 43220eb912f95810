import Foundation
import HTTP
import Job
import Locking
import Logging
import Reconciliation
import Storage
import Stripe

/// `stripe-events`, Stripe's daily run (`clawback run --daily --strategy stripe-payments`): the payments
/// Stripe's events name (refunds created, updated or failed, disputes opened, changed or closed) since the
/// last success of the window's daily run, less a day, each then asked alone as `stripe-payments` asks a
/// payment its lists miss. Stripe keeps events 30 days: a daily run reading from further back cannot see
/// what happened before that, says so (the summary's `stripe_events_not_covered`), and leaves it to the
/// monthly re-check, which lists everything. It concludes nothing about the payments no event names.
final class StripeEventsGateway: StoreGateway {
    static let eventTypes = [
        "refund.created", "refund.updated", "refund.failed", "charge.refunded", "charge.dispute.created", "charge.dispute.updated",
        "charge.dispute.closed", "charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated",
    ]
    static let warningTypes = ["radar.early_fraud_warning.created", "radar.early_fraud_warning.updated"]
    static let overlap: TimeInterval = 86_400
    static let retention: TimeInterval = 30 * 86_400

    let payments: StripePaymentsGateway
    let shops: [String]
    let logger: Logger
    let now: @Sendable () -> Date
    private let named = NamedPurchases()
    private let notCovered = Locked<[String]>([])

    /// With the early fraud warnings reviewed, a warning names its payment too.
    let reviewWarnings: Bool

    init(client: StripeClient, shops: [String], reviewWarnings: Bool = false, logger: Logger, now: @escaping @Sendable () -> Date = Date.init) {
        payments = StripePaymentsGateway(client: client, shops: Set(shops), lists: false, reviewWarnings: reviewWarnings)
        self.reviewWarnings = reviewWarnings
        self.shops = shops
        self.logger = logger
        self.now = now
    }

    var statistics: RequestCounts { payments.statistics }

    func prepare(_ context: RunContext) async throws {
        let selection = context.selection
        let last = try await context.database.run { try RunStore.lastSucceededStart(of: StripeStore.events, like: selection, on: $0) }
        let from = max(selection.window.start, (last ?? selection.window.start) - Self.overlap)
        // A minute's margin: an event at the horizon's edge may be gone by the time its page is read.
        let horizon = now() - Self.retention + 60
        if from < horizon {
            let gap = "Stripe keeps 30 days of events: from \(from) to \(horizon) only the monthly re-check finds refunds and disputes"
            notCovered.withLock { $0 = self.shops.map { "\($0): \(gap)" } }
            logger.warning("the daily run cannot read Stripe's events far enough back", metadata: ["from": "\(from)", "horizon": "\(horizon)"])
        }
        var ids = Set<String>()
        var events = 0
        try await payments.client.list(
            StripeEvent.self, "/v1/events",
            query: (Self.eventTypes + (reviewWarnings ? Self.warningTypes : [])).map { ("types[]", $0) } + [
                ("created[gte]", String(Int64(max(from, horizon).timeIntervalSince1970)))
            ]
        ) { page in
            events += page.count
            for event in page { if let intent = event.paymentIntent { ids.insert(intent) } }
        }
        named.set(ids)
        logger.info(
            "Stripe's events read for the daily run", metadata: ["events.from": "\(from)", "events": "\(events)", "payments": "\(ids.count)"])
    }

    func narrowing(_ selection: GrantSelection) -> GrantSelection { named.narrowing(selection) }

    func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer { await payments.answer(for: grant, ledger: ledger) }

    func contribute(to counters: inout RunCounters) {
        for gap in notCovered.withLock({ $0 }) where !counters.voidsNotCovered.contains(gap) { counters.voidsNotCovered.append(gap) }
    }
}
