import AppStore
public import Foundation
public import Job
public import Logging
public import Storage

/// `clawback refund-requests answer --dry-run`: what the hourly job would answer Apple now, changing nothing.
/// It reads each app's feeds from their cursors (verified, as the job reads them) and the open requests, reads
/// the grants and calls the studio's hook, and prints each request's answer. It records nothing (no request,
/// decision or cursor), stores and sends no answer, writes no metrics, and takes no lock.
public enum RefundRequestsPreview {
    /// One request and what the job would do about it.
    public struct Line: Sendable, Equatable, Codable {
        public var bundleID: String
        public var transactionID: String
        public var notificationUUID: String
        /// Whether a run has recorded it already (false: only the feed names it yet).
        public var recorded: Bool
        /// `send`, `resend` (the stored answer, sent again exactly), `wait` (no grant yet), `unanswerable`,
        /// `not_now`, `not_consented`, `expires`.
        public var action: String
        public var deliveryStatus: String?
        public var consumptionPercentage: Int?
        public var refundPreference: String?
        public var reason: String
    }

    public struct Outcome: Sendable, Equatable, Codable {
        public var notificationsRead = 0
        public var feedsNotWhole = 0
        public var requests: [Line] = []
    }

    public typealias Failure = RefundRequestRun.Failure

    public static func perform(
        database: DatabaseConfiguration, configuration: ClawbackConfiguration, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) async throws(Failure) -> Outcome {
        // As the job refuses to start: without app_apple_id, production notifications cannot be verified.
        let withoutAppleID = AppleJobStart.appsWithoutAppleID(configuration)
        guard withoutAppleID.isEmpty else {
            throw .configuration(
                .asked(
                    "refund requests need app_apple_id for \(withoutAppleID.joined(separator: ", ")): production notifications are verified against it"
                ))
        }
        let start = try await AppleJobStart.open(
            configuration, database: database, maxConcurrentRequests: 8, shardCount: 1, logger: logger, failing: Failure.self)
        defer { start.close() }
        let work = RefundRequestWork(configuration: configuration, apps: start.apps, session: start.session, logger: logger, now: now)
        do {
            try await start.session.run { try $0.forbidWrites() }
            return try await preview(work)
        } catch let error as DatabaseError {
            throw .database(error)
        } catch {
            throw .unavailable(Unavailable(cause: error))
        }
    }

    static func preview(_ work: RefundRequestWork) async throws -> Outcome {
        var counted = RefundRequestRun.Outcome()
        let read = try await work.gatherFeeds(into: &counted)
        var outcome = Outcome(notificationsRead: counted.notificationsRead, feedsNotWhole: counted.feedsNotWhole)
        let ids = read.requests.map(\.notificationUUID)
        let recorded = try await work.session.run { try RefundRequestStore.recorded(ids, on: $0) }
        var seen = Set<UUID>()
        let fresh = read.requests.filter { !recorded.contains($0.notificationUUID) && seen.insert($0.notificationUUID).inserted }
        let open = try await work.session.run { [now = work.now] in try RefundRequestStore.open(now: now(), on: $0) }
        let requests = open.map { ($0, true) } + fresh.map { (OpenRefundRequest(notice: $0), false) }
        for (request, isRecorded) in requests {
            var line = Line(
                bundleID: request.bundleID, transactionID: request.transactionID, notificationUUID: request.notificationUUID.uuidString,
                recorded: isRecorded, action: "", reason: "")
            guard let app = work.configuration.apps.first(where: { $0.bundleID == request.bundleID }) else {
                (line.action, line.reason) = ("unanswerable", "the app \(request.bundleID) is no longer configured")
                outcome.requests.append(line)
                continue
            }
            if !app.refundRequests.customerConsented {
                (line.action, line.reason) = ("not_consented", "the app has no customer consent to share consumption data: never answered")
            } else if work.now() >= request.deadline - RefundRequestWork.deadlineMargin {
                (line.action, line.reason) = ("expires", "less than 5 minutes before Apple's 12-hour deadline: nothing would be sent")
            } else {
                let productType = request.productType.map(ProductType.init(rawValue:))
                switch try await RefundRequestDecision.make(
                    request, app: app, productType: productType, configuration: work.configuration, session: work.session, now: work.now)
                {
                case .resend(let body):
                    line.action = "resend"
                    line.reason = "the answer stored earlier, sent again exactly"
                    line.deliveryStatus = body.deliveryStatus.rawValue
                    line.consumptionPercentage = body.consumptionPercentage.map(Int.init)
                    line.refundPreference = body.refundPreference?.rawValue
                case .answer(let body, _, _):
                    line.action = "send"
                    line.reason = "decided from the grant and clawback.units_consumed"
                    line.deliveryStatus = body.deliveryStatus.rawValue
                    line.consumptionPercentage = body.consumptionPercentage.map(Int.init)
                    line.refundPreference = body.refundPreference?.rawValue
                case .waitForGrant: (line.action, line.reason) = ("wait", "no grant yet: the grant path may still record it")
                case .unanswerable(let reason): (line.action, line.reason) = ("unanswerable", reason)
                case .notNow(let reason): (line.action, line.reason) = ("not_now", reason)
                }
            }
            outcome.requests.append(line)
        }
        return outcome
    }
}

extension RefundRequestsPreview.Outcome {
    /// What the preview prints: one row per request, or (`--json`) JSON.
    public func rendered(json: Bool, oneLine: Bool) -> String {
        if json || oneLine { return SummaryJSON.render(self, oneLine: oneLine) }
        let head = TextTable.render([
            ["DRY RUN", "nothing recorded, stored or sent"], ["notifications read", String(notificationsRead)],
            ["feeds not read whole", String(feedsNotWhole)],
        ])
        let rows = requests.map { line in
            [
                line.transactionID, line.action, line.deliveryStatus ?? "", line.consumptionPercentage.map { String(Double($0) / 1000) + "%" } ?? "",
                line.refundPreference ?? "", line.recorded ? "recorded" : "new", line.reason,
            ]
        }
        return head + "\n" + TextTable.render([["transaction", "would", "delivery", "consumed", "preference", "request", "why"]] + rows)
    }
}
