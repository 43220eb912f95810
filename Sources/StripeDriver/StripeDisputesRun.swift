import CrashPoints
public import Foundation
import HTTP
public import Job
public import Logging
public import Storage
import Stripe

/// `clawback stripe disputes`, run hourly: answers the web shop's disputes with the game's evidence
/// (docs/stripe.md, "Disputes answered"). Reads the disputes of the last `lookback` (every one that can still
/// await a response), records each awaiting one once (and, for finance, every other dispute of a payment the
/// game granted, with its outcome and fee), decides its evidence from the game's facts
/// (`StripeDisputeEvidence`) and stores it before anything is sent, stages it (`submit=false`), then submits
/// it (`submit=true`, written `submitting` first), each POST under an Idempotency-Key derived from the
/// dispute: a rerun after a kill sends the same request, which Stripe answers with the first answer, and a
/// dispute already submitted is never submitted again. Never accepts a dispute. Single-flight (85); a
/// dispute whose facts could not be read or whose POST failed is left for the next run (75).
public enum StripeDisputesRun {
    /// Disputes are read back this far: a dispute's `due_by` is days to weeks after it is opened.
    static let lookback: TimeInterval = 60 * 86_400

    public struct Outcome: Sendable, Equatable, Codable {
        public var disputesRead = 0
        public var newlySeen = 0
        /// Inquiries clawback had answered, left or closed that Stripe escalated to a chargeback awaiting a
        /// response: reopened, to be answered as the chargeback.
        public var reopened = 0
        public var stored = 0
        public var submitted = 0
        public var left = 0
        public var closed = 0
        /// Disputes Stripe refused the evidence of (a 400 no retry changes): for a person.
        public var refused = 0
        /// Disputes left for the next run: facts unreadable, or a POST that failed.
        public var notFinished: [String] = []
        /// Stripe refused the key a POST (403): it lacks Write on Disputes.
        public var forbidden: String?
        /// Radar's early fraud warnings read, and those about granted payments recorded for the first time.
        public var fraudWarningsRead = 0
        public var fraudWarningsNew = 0
        /// Why the warnings could not be read (the disputes are answered all the same: they are for finance).
        public var fraudWarningsUnread: String?
        public var stripeRequests = 0

        public init() {}
    }

    public typealias Failure = ScheduledJobFailure<Outcome>

    public static func perform(
        database: DatabaseConfiguration, configuration: ClawbackConfiguration, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) async throws(Failure) -> Outcome {
        guard let settings = StripeDriver.settings(configuration), let keyFile = settings.apiKeyFile, !settings.shops.isEmpty else {
            throw .configuration(.asked("clawback stripe disputes needs a stripe section with api_key_file and shops"))
        }
        let key: String
        do {
            key = try SecretFile.text(keyFile, field: "stripe.api_key_file").trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw .configuration(.invalid(error))
        }
        let start = try await ScheduledJobStart.open(
            store: "Stripe", timeout: .milliseconds(Int64(settings.timeoutSeconds * 1000)), database: database,
            lockKey: StripeDisputeStore.lockKey, logger: logger, failing: Failure.self)
        defer { start.http.shutdown() }
        let client = StripeClient(key: key, baseURL: settings.apiURL, http: start.http, requestsPerSecond: settings.requestsPerSecond)
        let work = StripeDisputesWork(client: client, shops: settings.shops, session: start.session, logger: logger, now: now)
        var outcome = try await start.holdingLock(doing: "reading Stripe's disputes") { try await work.run() }
        outcome.stripeRequests = client.statistics.requests
        if let forbidden = outcome.forbidden {
            throw .configuration(.asked("the Stripe key may not answer disputes (it needs Disputes: Write): \(forbidden)"))
        }
        guard outcome.notFinished.isEmpty else { throw .unfinished(outcome) }
        return outcome
    }
}

/// One run's work on the disputes, each step committed before the next.
struct StripeDisputesWork {
    let client: StripeClient
    let shops: [String]
    let session: DatabaseSession
    let logger: Logger
    let now: @Sendable () -> Date

    func run() async throws -> StripeDisputesRun.Outcome {
        var outcome = StripeDisputesRun.Outcome()
        // Every dispute of the lookback, read whole (a partial list fails the run), then recorded. A dispute
        // Stripe lists in a shape this version cannot read is left for the next run (and asked alone, if it
        // was recorded before): one such dispute must not keep every other from its answer.
        var byID: [String: Dispute] = [:]
        var unreadable: [(id: String?, problem: String)] = []
        let since = Int64((now() - StripeDisputesRun.lookback).timeIntervalSince1970)
        try await client.listEach(Dispute.self, "/v1/disputes", query: [("created[gte]", String(since))]) { page in
            for item in page {
                switch item {
                case .read(let dispute): byID[dispute.id] = dispute
                case .unreadable(let item): unreadable.append((item.id, item.problem))
                }
            }
        }
        for (id, problem) in unreadable {
            logger.error(
                "a dispute Stripe listed could not be read; left for the next run", metadata: ["dispute": "\(id ?? "?")", "error": "\(problem)"])
            outcome.notFinished.append(id ?? "a dispute without a readable id")
        }
        outcome.disputesRead = byID.count + unreadable.count
        // Every dispute awaiting a response, and every other one of a payment the game granted (for finance:
        // won or lost, with its fee); one recorded before is brought up to date whatever it is.
        var seen: [StripeDisputeStore.Seen] = []
        for dispute in byID.values.sorted(by: { $0.id < $1.id }) {
            let granted = try await grantShop(of: dispute)
            seen.append(Self.seen(dispute, shop: granted ?? shops[0], recordIfNew: dispute.awaitsResponse || granted != nil))
        }
        (outcome.newlySeen, outcome.reopened) = try await session.run { [seen, now] connection in
            let before = try StripeDisputeStore.answerable(on: connection)
            let reopened = try StripeDisputeStore.record(seen, now: now(), on: connection)
            return (try StripeDisputeStore.answerable(on: connection) - before, reopened)
        }
        // What became of the disputes older than the list's reach: each asked alone until Stripe states its
        // outcome, and answered below if it turns out an inquiry escalated to a chargeback awaiting a response.
        // A chargeback's outcome only finance waits on, so one that cannot be read is asked again next run; an
        // inquiry's leaves the run unfinished (75), as it may await an answer.
        let later = try await session.run { [now] in try StripeDisputeStore.awaitingOutcome(now: now(), on: $0) }
        for (id, isInquiry) in later where byID[id] == nil {
            let dispute: Dispute
            do {
                dispute = try await client.get(Dispute.self, "/v1/disputes/" + URLEncoding.unreserved(id))
            } catch {
                logger.notice("a dispute's outcome could not be read; asked again next run", metadata: ["dispute": "\(id)", "error": "\(error)"])
                // An inquiry's may have become a chargeback awaiting an answer: not finished until read.
                if isInquiry { outcome.notFinished.append(id) }
                continue
            }
            outcome.reopened += try await session.run { [now, shops] in
                try StripeDisputeStore.record([Self.seen(dispute, shop: shops[0], recordIfNew: false)], now: now(), on: $0)
            }
            byID[id] = dispute
        }
        // A key refused a POST (403) refuses them all: the run stops at the first.
        for item in try await session.run({ try StripeDisputeStore.work(on: $0) }) where outcome.forbidden == nil {
            try await answer(item, dispute: byID[item.disputeID], outcome: &outcome)
        }
        try await keepFraudWarnings(since: since, outcome: &outcome)
        return outcome
    }

    /// A dispute as the store records it.
    static func seen(_ dispute: Dispute, shop: String, recordIfNew: Bool) -> StripeDisputeStore.Seen {
        var fee: StripeDisputeStore.Fee?
        if case .charged(let minor, let currency) = dispute.fee { fee = .init(minor: minor, currency: currency) }
        return StripeDisputeStore.Seen(
            disputeID: dispute.id, shop: shop, paymentIntent: dispute.paymentIntent, charge: dispute.charge, reason: dispute.reason,
            status: dispute.status, amountMinor: dispute.amount, currency: dispute.currency, dueBy: dispute.dueBy, disputedAt: dispute.created,
            awaiting: dispute.awaitsResponse, fee: fee, feeUnknown: dispute.fee == .unknown, recordIfNew: recordIfNew,
            submissionCount: dispute.submissionCount)
    }

    /// The shop whose Stripe grant the dispute's payment is; nil when the game has no grant of it.
    func grantShop(of dispute: Dispute) async throws -> String? {
        guard let paymentIntent = dispute.paymentIntent else { return nil }
        return try await session.run { [shops] in try StripeDisputeStore.shop(ofPaymentIntent: paymentIntent, among: shops, on: $0) }
    }

    /// Moves one dispute on as far as it goes this run.
    func answer(_ item: StripeDisputeStore.Work, dispute listed: Dispute?, outcome: inout StripeDisputesRun.Outcome) async throws {
        let id = item.disputeID
        var state = item.state
        // A dispute older than the list's lookback is asked alone: its status says what became of it.
        var dispute = listed
        if dispute == nil {
            do {
                dispute = try await client.get(Dispute.self, "/v1/disputes/" + URLEncoding.unreserved(id))
            } catch let error where error.kind == .refused(status: 404, type: "invalid_request_error", code: "resource_missing") {
                try await session.run { try StripeDisputeStore.settle(id, .closed, why: "no longer known to Stripe: \(error)", now: now(), on: $0) }
                outcome.closed += 1
                return
            } catch {
                if !outcome.notFinished.contains(id) { outcome.notFinished.append(id) }
                return
            }
        }
        guard let current = dispute else { return }
        var item = item
        if listed == nil {
            // Recorded as read (which may move an escalated inquiry to its chargeback), then taken up as it now is.
            let (reopened, refreshed) = try await session.run { [now, shops] connection in
                let reopened = try StripeDisputeStore.record([Self.seen(current, shop: shops[0], recordIfNew: false)], now: now(), on: connection)
                return (reopened, try StripeDisputeStore.work(only: id, on: connection).first)
            }
            outcome.reopened += reopened
            guard let refreshed else { return }
            item = refreshed
            state = refreshed.state
        }
        // Submissions of this stage: an escalated inquiry's are counted from the chargeback on.
        let submissions = current.submissionCount - item.submissionsBefore
        if !current.awaitsResponse || submissions > 0 {
            // Submitted (by this job's earlier POST whose answer was lost, or in the Dashboard) or closed.
            let submittedHere = state == .submitting && submissions > 0
            try await session.run { [state] in
                try StripeDisputeStore.settle(
                    id, submittedHere ? .submitted : .closed,
                    why: submittedHere
                        ? nil : "\(current.status) with \(submissions) submission(s) of this stage before clawback submitted (was \(state.rawValue))",
                    submissionCount: current.submissionCount, now: now(), on: $0)
            }
            if submittedHere { outcome.submitted += 1 } else { outcome.closed += 1 }
            return
        }
        // Nothing is started, staged or submitted this near the deadline: the bank may never see it.
        if let problem = StripeDisputeEvidence.deadlineProblem(current.dueBy, now: now()) {
            let why = state == .open || state == .setAside ? problem : "\(state.rawValue), not submitted: \(problem)"
            try await session.run { try StripeDisputeStore.settle(id, .left, why: why, now: now(), on: $0) }
            outcome.left += 1
            return
        }
        if state == .open || state == .setAside {
            let facts: DisputeFacts
            do {
                facts = try await session.run { [paymentIntent = item.paymentIntent, shop = item.shop] connection in
                    guard let paymentIntent else { return DisputeFacts(delivered: false) }
                    return try StripeDisputeStore.facts(paymentIntent: paymentIntent, shop: shop, on: connection)
                }
            } catch {
                // A hook that failed (the game's wallet unreachable) sets this one aside; the others go on.
                logger.warning("a dispute was set aside: the game's facts could not be read", metadata: ["dispute": "\(id)", "error": "\(error)"])
                try await session.run {
                    try StripeDisputeStore.settle(id, .setAside, why: "the game's facts could not be read: \(error)", now: now(), on: $0)
                }
                outcome.notFinished.append(id)
                return
            }
            switch StripeDisputeEvidence.decide(facts, shop: item.shop) {
            case .leave(let why):
                try await session.run { try StripeDisputeStore.settle(id, .left, why: why, now: now(), on: $0) }
                outcome.left += 1
                return
            case .answer(let evidence):
                try await session.run { try StripeDisputeStore.store(id, evidence: evidence, facts: facts, now: now(), on: $0) }
                CrashPoint.reached("stripe-disputes.after-store")
                outcome.stored += 1
                state = .stored
            }
        }
        let keys = "clawback-dispute-\(id)-\(item.keyGeneration)"
        if state == .stored {
            // Exactly the evidence stored: a row whose evidence cannot be read sends nothing.
            let stored = try await session.run { try StripeDisputeStore.work(only: id, on: $0).first?.evidence } ?? []
            let evidence = stored.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
            guard !evidence.isEmpty, evidence.count == stored.count else {
                try await session.run { try StripeDisputeStore.settle(id, .setAside, why: "its stored evidence cannot be read", now: now(), on: $0) }
                outcome.notFinished.append(id)
                return
            }
            guard let staged = await post(id, form: evidence + [("submit", "false")], key: keys + "-stage", outcome: &outcome) else { return }
            // Escalated since the run read it: recorded as it now is (its stage, new keys), answered next run.
            if item.stageDiffers(from: staged.status) {
                _ = try await session.run { [now, shops] in
                    try StripeDisputeStore.record([Self.seen(staged, shop: shops[0], recordIfNew: false)], now: now(), on: $0)
                }
                outcome.notFinished.append(id)
                return
            }
            guard staged.hasEvidence, staged.submissionCount <= item.submissionsBefore else {
                try await session.run {
                    try StripeDisputeStore.failed(id, error: "Stripe's answer to the staging shows no evidence staged", newKeys: false, on: $0)
                }
                outcome.notFinished.append(id)
                return
            }
            try await session.run {
                try StripeDisputeStore.settle(id, .staged, posted: true, submissionCount: staged.submissionCount, now: now(), on: $0)
            }
            state = .staged
        }
        if state == .staged || state == .submitting {
            // Written before the POST: a kill after it finds `submitting`, and the next run asks Stripe first.
            try await session.run { try StripeDisputeStore.settle(id, .submitting, now: now(), on: $0) }
            CrashPoint.reached("stripe-disputes.before-submit")
            guard let submitted = await post(id, form: [("submit", "true")], key: keys + "-submit", outcome: &outcome) else { return }
            CrashPoint.reached("stripe-disputes.after-submit")
            guard submitted.submissionCount > item.submissionsBefore else {
                try await session.run {
                    try StripeDisputeStore.failed(id, error: "Stripe's answer to the submit shows no submission", newKeys: false, on: $0)
                }
                outcome.notFinished.append(id)
                return
            }
            try await session.run {
                try StripeDisputeStore.settle(id, .submitted, posted: true, submissionCount: submitted.submissionCount, now: now(), on: $0)
            }
            outcome.submitted += 1
        }
    }

    /// One POST of the dispute's evidence, and Stripe's dispute as it answered. A failure leaves the dispute for
    /// the next run; a 5xx Stripe may have stored under the key moves the dispute to new keys (the next run
    /// reads the dispute before it sends anything again); a refusal no retry changes (a 400 other than the
    /// key's) ends it as `refused`, and a key without the permission (403) stops the run (exit 78).
    func post(_ id: String, form: [(String, String)], key: String, outcome: inout StripeDisputesRun.Outcome) async -> Dispute? {
        do {
            return try await client.post(Dispute.self, "/v1/disputes/" + URLEncoding.unreserved(id), form: form, idempotencyKey: key)
        } catch {
            logger.warning("a dispute's evidence could not be sent", metadata: ["dispute": "\(id)", "error": "\(error)"])
            switch error.kind {
            case .refused(403, _, _):
                outcome.forbidden = "\(error)"
            case .refused(400, let type, _) where type != "idempotency_error":
                try? await session.run {
                    try StripeDisputeStore.settle(id, .refused, why: "Stripe refused it: \(error)", posted: true, now: now(), on: $0)
                }
                outcome.refused += 1
                return nil
            default: break
            }
            let stored = if case .refused(let status, _, _) = error.kind { status >= 500 } else { false }
            try? await session.run { try StripeDisputeStore.failed(id, error: "\(error)", newKeys: stored, on: $0) }
            outcome.notFinished.append(id)
            return nil
        }
    }
}

extension StripeDisputesRun.Outcome {
    /// The end-of-job summary on stdout: a table, or (`--json`, or `--log-format json`) JSON.
    public func rendered(json: Bool, oneLine: Bool) -> String {
        if json || oneLine { return SummaryJSON.render(self, oneLine: oneLine) }
        return TextTable.render([
            ["disputes read", String(disputesRead)], ["newly seen", String(newlySeen)],
            ["inquiries escalated, reopened", String(reopened)], ["evidence stored", String(stored)],
            ["submitted", String(submitted)], ["left (policy)", String(left)], ["closed before submitted", String(closed)],
            ["refused by Stripe", String(refused)],
            ["early fraud warnings", fraudWarningsUnread.map { "not read: \($0)" } ?? "\(fraudWarningsRead) read, \(fraudWarningsNew) new"],
            ["left for the next run", notFinished.isEmpty ? "none" : notFinished.joined(separator: ", ")],
            ["Stripe requests", String(stripeRequests)],
        ])
    }
}

extension StripeDisputesRun.Outcome: ScheduledJobOutcome {
    public static let command = "clawback stripe disputes"

    public var unfinishedDescription: String {
        "disputes \(notFinished.joined(separator: ", ")) were not finished (their facts or a POST failed): the next run goes on with them"
    }
}
