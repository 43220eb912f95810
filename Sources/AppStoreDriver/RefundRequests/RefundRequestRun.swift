import AppStore
import CrashPoints
public import Foundation
import HTTP
public import Job
public import Logging
public import Storage

/// `clawback refund-requests answer`, run every hour: reads Apple's refund requests (CONSUMPTION_REQUEST)
/// and decisions since each feed's cursor (with an overlap), records each request once, and answers each
/// consented one with Send Consumption Information before its 12-hour deadline.
///
/// Exactly once: a request is one row per notificationUUID. Its answer is decided once and stored
/// (`sending`) before it is sent, and only a stored answer is ever sent. A process killed after sending and
/// before recording Apple's 202 leaves the row `sending`: the next run sends the same body again, since
/// Apple's PUT is idempotent and a request left unanswered costs the studio the refund. Runs are
/// single-flight (an advisory lock); a second one exits 85.
public enum RefundRequestRun {
    public struct Request: Sendable {
        public var database: DatabaseConfiguration
        public var metricsFile: String?
        public var now: @Sendable () -> Date

        public init(database: DatabaseConfiguration, metricsFile: String?, now: @escaping @Sendable () -> Date = Date.init) {
            self.database = database
            self.metricsFile = metricsFile
            self.now = now
        }
    }

    /// What one run did, and what is left.
    public struct Outcome: Sendable, Equatable, Codable {
        public var notificationsRead = 0
        public var rejectedNotifications = 0
        public var feedsNotWhole = 0
        public var newRequests = 0
        public var decisionsJoined = 0
        public var answered = 0
        /// Stored answers sent again (a run died between sending one and recording Apple's 202).
        public var resent = 0
        public var refusedByApple = 0
        /// Final without an answer: the game cannot tell whether it delivered, or consent was withdrawn.
        public var unanswerable = 0
        /// Purchases without a grant yet, waiting `undelivered_after_hours` before they are answered
        /// "not delivered" (not open: waiting is the plan).
        public var waiting = 0
        public var notAnswered = 0
        public var expired = 0
        /// Requests still waiting for an answer before their deadline, after this run.
        public var open = 0
        public var oldestOpenAgeSeconds = 0.0
        public var appleRequests = 0

        /// Whether anything needs the next run (or a person): exit 75.
        public var isUnfinished: Bool { open > 0 || feedsNotWhole > 0 }
    }

    public typealias Failure = ScheduledJobFailure<Outcome>

    public static func perform(_ request: Request, configuration: ClawbackConfiguration, logger: Logger) async throws(Failure) -> Outcome {
        let withoutAppleID = AppleJobStart.appsWithoutAppleID(configuration)
        guard withoutAppleID.isEmpty else {
            throw .configuration(
                .asked(
                    "refund requests need app_apple_id for \(withoutAppleID.joined(separator: ", ")): production notifications are verified against it"
                ))
        }
        let start = try await AppleJobStart.open(
            configuration, database: request.database, maxConcurrentRequests: 16, shardCount: 1, logger: logger, failing: Failure.self)
        defer { start.close() }
        let (apps, session) = (start.apps, start.session)
        let acquired: ScopeLock?
        do {
            // Each step commits as it goes and an answer is stored before it is sent, so a lost lock needs no
            // stop: the watcher's log line says it. A second run started meanwhile may send a stored answer
            // again, always the same body to Apple's idempotent PUT, as after a kill.
            acquired = try await ScopeLock.acquire(RefundRequestStore.lockKey, like: session, logger: logger) {}
        } catch {
            throw .database(orUnavailable: error)
        }
        guard let lock = acquired else { throw .locked(try? await session.holder(of: RefundRequestStore.lockKey)) }
        var outcome: Outcome
        do {
            outcome = try await RefundRequestWork(configuration: configuration, apps: apps, session: session, logger: logger, now: request.now).run()
        } catch let failure as Failure {
            await lock.release()
            throw failure
        } catch let error as DatabaseError {
            // 69 when a retry may help, 77 for a privilege the role lacks (an hourly retry would not grant it).
            await lock.release()
            throw .database(error)
        } catch {
            await lock.release()
            throw .unavailable(Unavailable(cause: error))
        }
        await lock.release()
        outcome.appleRequests = apps.statistics.requests
        let metrics = MetricsTarget.configured(file: request.metricsFile ?? configuration.refundRequestFeed.metricsFile, configuration)
        if !metrics.isEmpty {
            do {
                try await RefundRequestMetrics.write(outcome, to: metrics, now: request.now())
            } catch {
                logger.error("cannot deliver the metrics", metadata: ["error": "\(error)"])
            }
        }
        guard !outcome.isUnfinished else { throw .unfinished(outcome) }
        return outcome
    }
}

/// One run's work, on a session that holds the lock.
struct RefundRequestWork {
    let configuration: ClawbackConfiguration
    let apps: AppleApps
    let session: DatabaseSession
    let logger: Logger
    let now: @Sendable () -> Date

    func run() async throws -> RefundRequestRun.Outcome {
        var outcome = RefundRequestRun.Outcome()
        try await readFeeds(into: &outcome)
        outcome.expired = try await session.run { [now] in try RefundRequestStore.expire(now: now(), on: $0) }
        let open = try await session.run { [now] in try RefundRequestStore.open(now: now(), on: $0) }
        let waiting = try await answer(open, into: &outcome)
        // Waiting for a late grant is the plan, not a failure: neither open nor in the oldest age.
        let left = try await session.run { [now] in try RefundRequestStore.open(now: now(), on: $0) }.filter {
            !waiting.contains($0.notificationUUID)
        }
        outcome.open = left.count
        outcome.oldestOpenAgeSeconds = left.map { now().timeIntervalSince($0.requestedAt) }.max() ?? 0
        return outcome
    }

    /// What every configured app's feeds (both environments) hold since their cursors, read and verified,
    /// and how far each cursor may move: nothing recorded.
    struct FeedsRead {
        var requests: [RefundRequestNotice] = []
        var decisions: [RefundDecisionNotice] = []
        var whole: [(bundle: String, environment: String, readUntil: Date)] = []
    }

    /// Reads every configured app's feeds (both environments), then records what they hold and moves the
    /// cursors of the feeds read whole, in one transaction.
    func readFeeds(into outcome: inout RefundRequestRun.Outcome) async throws {
        let read = try await gatherFeeds(into: &outcome)
        let (requests, decisions, whole) = (read.requests, read.decisions, read.whole)
        let consented = Set(configuration.apps.filter(\.refundRequests.customerConsented).map(\.bundleID))
        let (new, joined) = try await session.run { [requests, decisions, whole] connection in
            try RefundRequestStore.recordFeeds(
                requests: requests, decisions: decisions, consented: { consented.contains($0) },
                readWhole: whole.map { ($0.bundle, $0.environment, $0.readUntil) }, on: connection)
        }
        CrashPoint.reached("refund-requests.after-record")
        outcome.newRequests = new
        outcome.decisionsJoined = joined
        logger.info(
            "refund-request feeds read",
            metadata: [
                "notifications": "\(outcome.notificationsRead)", "new_requests": "\(new)", "decisions_joined": "\(joined)",
                "rejected": "\(outcome.rejectedNotifications)", "feeds_not_whole": "\(outcome.feedsNotWhole)",
            ])
    }

    /// Reads every configured app's feeds (both environments) from their cursors, recording nothing.
    func gatherFeeds(into outcome: inout RefundRequestRun.Outcome) async throws -> FeedsRead {
        let settings = configuration.refundRequestFeed
        let end = now()
        var requests: [RefundRequestNotice] = []
        var decisions: [RefundDecisionNotice] = []
        var whole: [(bundle: String, environment: String, readUntil: Date)] = []
        for app in configuration.apps {
            guard let client = apps.clients[app.bundleID] else {
                outcome.feedsNotWhole += 2
                continue
            }
            for environment in [AppStoreEnvironment.production, .sandbox] {
                let cursor = try await session.run {
                    try RefundRequestStore.cursor(bundleID: app.bundleID, environment: environment.rawValue, on: $0)
                }
                let reach = end - NotificationHistoryRequest.reach(environment)
                // A cursor ahead of this clock (a clock stepped back since) still reads the last overlap.
                let start = min(
                    end - 60, max(reach, cursor.map { $0 - Double(settings.overlapMinutes) * 60 } ?? end - Double(settings.lookbackHours) * 3600))
                let feed = RefundRequestFeed(
                    client: client, verifier: apps.verifier,
                    expectation: AppExpectation(bundleID: app.bundleID, environment: environment, appAppleID: app.appAppleID), logger: logger)
                let read = await feed.read(from: start, to: end)
                outcome.notificationsRead += read.notifications
                outcome.rejectedNotifications += read.rejected
                requests += read.requests
                decisions += read.decisions
                if read.whole {
                    whole.append((app.bundleID, environment.rawValue, end))
                } else {
                    // Whatever was not read or not verified is read again, for as long as it could still be
                    // answered: the cursor goes no further than 13 hours back (a request is answerable for
                    // 12), and each run also rereads the overlap before it. So one notification that never
                    // verifies does not pin the feed for Apple's 180 days; but after a feed has failed for
                    // longer than the overlap and those 13 hours, requests and decisions older than that are
                    // never recorded (they could not have been answered; they are missing from the reports).
                    outcome.feedsNotWhole += 1
                    whole.append((app.bundleID, environment.rawValue, end - RefundRequestNotice.answerWindow - 3600))
                }
            }
        }
        return FeedsRead(requests: requests, decisions: decisions, whole: whole)
    }

    enum Result: Sendable {
        case answered(resent: Bool)
        case refused, unanswerable
        case waiting(UUID)
        case notAnswered
        /// Consent withdrawn (or the app removed) after an answer was stored and perhaps sent: not sent again,
        /// not open, and not "never answered" either; it settles at its deadline as possibly accepted.
        case heldBack(UUID)
    }

    /// Answers the open requests, a few at a time (Apple's 50 requests/s are kept by the client's limiter).
    /// Returns the requests left waiting for a late grant.
    func answer(_ open: [OpenRefundRequest], into outcome: inout RefundRequestRun.Outcome) async throws -> Set<UUID> {
        var waiting: Set<UUID> = []
        try await withThrowingTaskGroup(of: Result.self) { group in
            var inFlight = 0
            func count(_ result: Result) {
                switch result {
                case .answered(let resent):
                    outcome.answered += 1
                    if resent { outcome.resent += 1 }
                case .refused: outcome.refusedByApple += 1
                case .unanswerable: outcome.unanswerable += 1
                case .waiting(let id):
                    outcome.waiting += 1
                    waiting.insert(id)
                case .notAnswered: outcome.notAnswered += 1
                case .heldBack(let id):
                    outcome.unanswerable += 1
                    waiting.insert(id)
                }
            }
            for request in open {
                if inFlight >= 8, let result = try await group.next() {
                    inFlight -= 1
                    count(result)
                }
                group.addTask { try await answer(request) }
                inFlight += 1
            }
            for try await result in group { count(result) }
        }
        return waiting
    }

    func answer(_ request: OpenRefundRequest) async throws -> Result {
        guard let app = configuration.apps.first(where: { $0.bundleID == request.bundleID }), let client = apps.clients[request.bundleID] else {
            // Removed from the configuration: no consent to answer with any more.
            if request.storedAnswer != nil { return heldBack(request, "the app \(request.bundleID) is no longer configured") }
            try await session.run {
                try RefundRequestStore.markUnanswered(
                    request.notificationUUID, state: .notConsented, reason: "the app \(request.bundleID) is no longer configured", on: $0)
            }
            return .unanswerable
        }
        // Apple wants nothing after the 12 hours; the next run marks the request expired.
        guard now() < request.deadline else { return .notAnswered }
        guard app.refundRequests.customerConsented else {
            // Consent withdrawn since the request was recorded: never answered, as Apple asks.
            if request.storedAnswer != nil { return heldBack(request, "the app's customer consent was withdrawn") }
            try await session.run {
                try RefundRequestStore.markUnanswered(
                    request.notificationUUID, state: .notConsented, reason: "the app's customer consent was withdrawn", on: $0)
            }
            return .unanswerable
        }
        let productType = request.productType.map(ProductType.init(rawValue:))
        let body: ConsumptionRequest
        let resent: Bool
        switch try await RefundRequestDecision.make(
            request, app: app, productType: productType, configuration: configuration, session: session, now: now)
        {
        case .resend(let stored):
            body = stored
            resent = true
            try await session.run { try RefundRequestStore.countAttempt(request.notificationUUID, on: $0) }
        case .notNow(let message):
            try await note(request, status: nil, code: nil, message)
            return .notAnswered
        case .waitForGrant:
            return .waiting(request.notificationUUID)
        case .unanswerable(let reason):
            // Final: no later run can know more. Said in the request's row and the metrics, not by exit 75.
            try await session.run {
                try RefundRequestStore.markUnanswered(request.notificationUUID, state: .unanswerable, reason: reason, on: $0)
            }
            logger.notice("a refund request cannot be answered", metadata: ["transaction": "\(request.transactionID)", "reason": "\(reason)"])
            return .unanswerable
        case .answer(let decided, let encoded, let facts):
            let answer = RefundRequestStore.StoredAnswer(
                body: encoded, deliveryStatus: decided.deliveryStatus.rawValue, consumptionPercentage: decided.consumptionPercentage.map(Int64.init),
                refundPreference: decided.refundPreference?.rawValue)
            let stored = try await session.run { try RefundRequestStore.markSending(request.notificationUUID, answer: answer, facts: facts, on: $0) }
            guard stored else { return .notAnswered }
            body = decided
            resent = false
        }
        CrashPoint.reached("refund-requests.before-send")
        do {
            // Five minutes short of Apple's deadline, against clock skew: no attempt or retry after that.
            try await client.sendConsumptionInformation(
                request.transactionID, environment: AppStoreEnvironment(rawValue: request.environment), answer: body, productType: productType,
                until: request.deadline - Self.deadlineMargin)
        } catch {
            switch error {
            case .apple(let apiError):
                // Apple documents 400 (a rule broken: one of its codes, or no body for a malformed request) and 404
                // 4040010 (TransactionIdNotFound) for this endpoint: those are final. Anything else, a proxy's
                // 403, 404 or HTML 400 included, is retried by the next run.
                if case .apple(let status, let code, let message) = apiError.kind, Self.isApplesRefusal(status: status, code: code, message: message)
                {
                    try await session.run {
                        try RefundRequestStore.markRefused(
                            request.notificationUUID, status: status, code: code?.rawValue, message: message ?? "\(apiError)", on: $0)
                    }
                    logger.error(
                        "Apple refused a refund-request answer",
                        metadata: ["transaction": "\(request.transactionID)", "error": "\(apiError)"])
                    return .refused
                }
                var status: Int?
                if case .apple(let answered, _, _) = apiError.kind { status = answered }
                try await note(request, status: status, code: apiError.appleCode?.rawValue, "\(apiError)")
            case .invalidLocally, .unencodable:
                try await note(request, status: nil, code: nil, "\(error)")
            }
            return .notAnswered
        }
        CrashPoint.reached("refund-requests.after-send")
        try await session.run { [now] in try RefundRequestStore.markAnswered(request.notificationUUID, at: now(), on: $0) }
        return .answered(resent: resent)
    }

    /// An answer stored before consent went away may already be at Apple: it is not sent again, and the
    /// request is left to settle at its deadline (`expire` says it may have been accepted).
    private func heldBack(_ request: OpenRefundRequest, _ reason: String) -> Result {
        logger.notice(
            "not sending a stored refund-request answer again",
            metadata: ["transaction": "\(request.transactionID)", "reason": "\(reason)"])
        return .heldBack(request.notificationUUID)
    }

    /// Nothing is stored or sent closer than this to Apple's deadline, against clock skew.
    static let deadlineMargin: TimeInterval = 300

    static func isApplesRefusal(status: Int, code: AppleErrorCode?, message: String?) -> Bool {
        switch status {
        case 404: return code == .transactionIDNotFound
        case 400: return code.map { $0.name != nil || (4_000_000..<4_010_000).contains($0.rawValue) } ?? (message == nil)
        default: return false
        }
    }

    private func note(_ request: OpenRefundRequest, status: Int?, code: Int64?, _ message: String) async throws {
        logger.warning(
            "a refund request was not answered this time", metadata: ["transaction": "\(request.transactionID)", "reason": "\(message)"])
        try await session.run { try RefundRequestStore.noteFailure(request.notificationUUID, status: status, code: code, message: message, on: $0) }
    }
}

extension RefundRequestRun.Outcome: ScheduledJobOutcome {
    public static let command = "clawback refund-requests answer"

    public var unfinishedDescription: String {
        "\(open) refund requests are still unanswered and \(feedsNotWhole) feeds were not read whole: the next run retries them"
    }
}
