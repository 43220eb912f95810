public import Foundation
import GooglePlay
import HTTP
public import Job
public import Logging
public import Storage

/// `clawback google-play sweep-voids`, run daily: reads each Google Play app's whole Voided Purchases feed
/// (the 30 days Google keeps, every time: Google filters on when it recorded a void and does not bound how late
/// a recorded void may appear, so no shorter overlap is safe, and a void kept before is kept once) and keeps
/// every void once, moving the app's cursor in the same transaction. An app whose feed could not be read whole,
/// or held rows clawback cannot use, keeps its cursor (the usable rows are kept) and exits 75.
/// Single-flight (an advisory lock); a second sweep exits 85.
///
/// The cursor says how far the feed was read: an app not swept for longer than Google keeps has a gap no one
/// can fill from the feed. The sweep records it (`google_void_cursors.gap_from`, `gap_until`), warns, and lists
/// it in its outcome, and keeps since when the app's voids are continuous (`covered_from`), which the Google
/// runs compare with their windows. The Orders API states refunds per order without that horizon (as far as
/// Google says): the monthly Google run asks it for every grant, and the daily one for those the kept voids name.
public enum GoogleVoidSweep {
    public struct Outcome: Sendable, Equatable, Codable {
        public var apps = 0
        public var pages = 0
        public var voidsRead = 0
        public var newVoids = 0
        /// Apps whose feed was not read whole this time (their cursors did not move).
        public var unreadApps: [String] = []
        /// Apps whose cursor was older than Google's 30 days: voids recorded in between are beyond reach.
        public var gaps: [String] = []

        public init() {}
    }

    public typealias Failure = ScheduledJobFailure<Outcome>

    public static func perform(
        database: DatabaseConfiguration, configuration: ClawbackConfiguration, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) async throws(Failure) -> Outcome {
        guard !configuration.googleApps.isEmpty else { throw .configuration(.asked("no Google Play app is configured: add one under google_apps")) }
        var keys: [ServiceAccountKey] = []
        for index in configuration.googleApps.indices {
            do {
                keys.append(try GooglePlayAppsFactory.key(index, configuration))
            } catch {
                throw .configuration(.invalid(error))
            }
        }
        // Each app's voids and cursor commit together.
        let start = try await ScheduledJobStart.open(
            store: "Google Play", timeout: configuration.google.timeout, database: database, lockKey: GoogleVoidStore.lockKey, logger: logger,
            failing: Failure.self)
        let (http, session, lock) = (start.http, start.session, start.lock)
        defer { http.shutdown() }
        var outcome = Outcome()
        for (app, key) in zip(configuration.googleApps, keys) {
            do {
                try await sweep(
                    app.packageName, key: key, configuration: configuration, http: http, session: session, now: now(), logger: logger, into: &outcome)
            } catch let error as DatabaseError {
                await lock.release()
                throw .database(error)
            } catch {
                outcome.unreadApps.append(app.packageName)
                logger.warning(
                    "a Google Play app's voided purchases could not be read whole; its cursor stays",
                    metadata: ["package": "\(app.packageName)", "error": "\(error)"])
            }
        }
        await lock.release()
        guard outcome.unreadApps.isEmpty else { throw .unfinished(outcome) }
        return outcome
    }

    static func sweep(
        _ packageName: String, key: ServiceAccountKey, configuration: ClawbackConfiguration, http: HTTPClient, session: DatabaseSession,
        now: Date, logger: Logger, into outcome: inout Outcome
    ) async throws {
        outcome.apps += 1
        let cursor = try await session.run { try GoogleVoidStore.cursor(packageName: packageName, on: $0) }
        let reach = now - VoidedPurchasesClient.horizon + VoidedPurchasesClient.horizonMargin
        var gap: GoogleVoidStore.Gap?
        if let cursor, cursor < reach {
            gap = GoogleVoidStore.Gap(from: cursor, until: reach)
            outcome.gaps.append(packageName)
            logger.warning(
                "a Google Play app was not swept for longer than Google keeps voided purchases: those recorded in between are beyond reach",
                metadata: ["package": "\(packageName)", "cursor": "\(cursor)", "reach": "\(reach)"])
        }
        let client = VoidedPurchasesClient(
            packageName: packageName, baseURL: configuration.google.apiURL, tokens: AccessTokenProvider(key: key, http: http), http: http)
        let feed = try await client.voids(from: reach, now: now)
        let voids = feed.rows.compactMap(stored)
        let unusable = feed.rows.count - voids.count
        // The usable rows are kept either way; the cursor moves only past a feed read whole and usable.
        let added = try await session.run { [gap] in
            try GoogleVoidStore.record(
                voids, packageName: packageName, readFrom: reach, readUntil: unusable == 0 ? feed.until : nil, gap: gap, on: $0)
        }
        outcome.pages += feed.pages
        outcome.voidsRead += feed.rows.count
        outcome.newVoids += added
        if unusable > 0 {
            throw GooglePlayError(
                .malformedAnswer,
                "\(unusable) voided purchases of \(packageName) lack a token or a time, void no unit, or carry codes out of range; the others were kept"
            )
        }
        logger.info(
            "voided purchases swept",
            metadata: ["package": "\(packageName)", "read": "\(feed.rows.count)", "new": "\(added)", "until": "\(feed.until)"])
    }

    /// A feed row as kept: a row without its token or time, with a quantity below one (never read as "the
    /// whole quantity", which only an absent quantity means), or with a source or reason past what a smallint
    /// holds is not a void clawback can use.
    static func stored(_ row: VoidedPurchase) -> StoredVoid? {
        let codes = Int32(Int16.min)...Int32(Int16.max)
        guard let token = row.purchaseToken, !token.isEmpty, let voided = row.voidedTimeMillis, (row.voidedQuantity ?? 1) > 0,
            codes.contains(row.voidedSource ?? 0), codes.contains(row.voidedReason ?? 0)
        else { return nil }
        return StoredVoid(
            purchaseToken: token, orderID: row.orderId.flatMap { $0.isEmpty ? nil : $0 },
            purchasedAt: row.purchaseTimeMillis.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            voidedAt: Date(timeIntervalSince1970: Double(voided) / 1000), source: row.voidedSource, reason: row.voidedReason,
            quantity: row.voidedQuantity)
    }
}

extension GoogleVoidSweep.Outcome {
    /// The end-of-job summary on stdout: a table, or (`--json`, or `--log-format json`) JSON.
    public func rendered(json: Bool, oneLine: Bool) -> String {
        if json || oneLine { return SummaryJSON.render(self, oneLine: oneLine) }
        return TextTable.render([
            ["apps swept", String(apps)], ["pages read", String(pages)], ["voids read", String(voidsRead)], ["new voids", String(newVoids)],
            ["not read whole", unreadApps.isEmpty ? "none" : unreadApps.joined(separator: ", ")],
            ["beyond Google's 30 days", gaps.isEmpty ? "none" : gaps.joined(separator: ", ")],
        ])
    }
}

extension GoogleVoidSweep.Outcome: ScheduledJobOutcome {
    public static let command = "clawback google-play sweep-voids"

    public var unfinishedDescription: String {
        "the voided purchases of \(unreadApps.joined(separator: ", ")) were not read whole: the next sweep reads them again"
    }
}
