import Foundation
import GooglePlay

/// `purchases.voidedpurchases.list`: the voids Google recorded between `startTime` and `endTime` (at most 30
/// days back, not after now), oldest recorded first, `maxResults` a page (1,000 at most and by default),
/// continued by `token`; rows of quantity-based partial refunds only with
/// `includeQuantityBasedPartialRefund=true`; 30 calls in any 30 seconds per app, then 429.
extension GooglePlaySimulator {
    static let feedReach: TimeInterval = 30 * 86_400
    static let feedCallsPer30Seconds = 30

    func voidedPurchases(_ query: [(String, String)], packageName: String, world: GooglePlayWorld) -> SimulatorReply {
        let now = clock()
        let allowed = feedQuota.withLock { quota -> Bool in
            let recent = (quota[packageName] ?? []).filter { $0 > now - 30 }
            quota[packageName] = recent
            guard recent.count < Self.feedCallsPer30Seconds else { return false }
            quota[packageName]?.append(now)
            return true
        }
        guard allowed else {
            stats.count(status: 429)
            return Self.googleError(429, "RESOURCE_EXHAUSTED", "rateLimitExceeded", "Quota exceeded: 30 queries in 30 seconds.")
        }
        func value(_ name: String) -> String? { query.last { $0.0 == name }?.1 }
        func invalid(_ message: String) -> SimulatorReply { Self.googleError(400, "INVALID_ARGUMENT", "invalidValue", message) }
        let pageSize = Int(value("maxResults") ?? "1000") ?? -1
        guard (1...1000).contains(pageSize) else { return invalid("maxResults must be between 1 and 1000.") }
        guard ["0", "1"].contains(value("type") ?? "0") else { return invalid("type must be 0 or 1.") }
        let quantities = value("includeQuantityBasedPartialRefund") == "true"
        var window: FeedWindow
        if let token = value("token") {
            // With a token, Google ignores the times: the token carries the query.
            guard let decoded = FeedWindow(token: token) else { return invalid("Invalid pagination token.") }
            window = decoded
        } else {
            let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
            let from = value("startTime").map { Int64($0) } ?? nowMillis - Int64(Self.feedReach * 1000)
            let until = value("endTime").map { Int64($0) } ?? nowMillis
            guard let from, let until else { return invalid("startTime and endTime are milliseconds since the epoch.") }
            // Google: startTime "can't be older than 30 days", endTime "can't be greater than the current time".
            // Whether an older start is refused or clamped Google does not say; the simulator refuses it.
            guard from >= nowMillis - Int64(Self.feedReach * 1000) else { return invalid("startTime can't be older than 30 days.") }
            guard until <= nowMillis, from <= until else { return invalid("endTime can't be greater than the current time, nor before startTime.") }
            window = FeedWindow(offset: 0, from: from, until: until)
        }
        var rows: [(recorded: Date, row: VoidedPurchase)] = []
        for order in world.orders.values where order.packageName == packageName {
            for void in order.voids ?? [] where void.quantity == nil || quantities {
                let recorded = Int64(void.recordedAt.timeIntervalSince1970 * 1000)
                guard recorded >= window.from, recorded <= window.until else { continue }
                rows.append(
                    (
                        void.recordedAt,
                        VoidedPurchase(
                            orderId: order.orderId, purchaseToken: order.purchaseToken,
                            purchaseTimeMillis: Int64(order.purchaseTime.timeIntervalSince1970 * 1000),
                            voidedTimeMillis: Int64(void.voidedAt.timeIntervalSince1970 * 1000), voidedSource: void.source,
                            voidedReason: void.reason, voidedQuantity: void.quantity)
                    ))
            }
        }
        rows.sort { ($0.recorded, $0.row.orderId ?? "") < ($1.recorded, $1.row.orderId ?? "") }
        let page = rows.dropFirst(window.offset).prefix(pageSize).map(\.row)
        var next =
            window.offset + page.count < rows.count ? FeedWindow(offset: window.offset + page.count, from: window.from, until: window.until) : nil
        if faults.withLock({ $0.endlessFeed }) { next = FeedWindow(offset: 0, from: window.from, until: window.until) }
        struct Answer: Encodable {
            struct Pagination: Encodable { var nextPageToken: String }
            struct PageInfo: Encodable {
                var totalResults: Int
                var resultPerPage: Int
                var startIndex: Int
            }
            var voidedPurchases: [VoidedPurchase]?
            var tokenPagination: Pagination?
            var pageInfo: PageInfo
        }
        return Self.json(
            Answer(
                voidedPurchases: page.isEmpty ? nil : Array(page), tokenPagination: next.map { .init(nextPageToken: $0.token) },
                pageInfo: .init(totalResults: rows.count, resultPerPage: pageSize, startIndex: window.offset)))
    }
}

/// Where a page of the feed starts, and the query it belongs to: what the simulator's page token carries.
struct FeedWindow: Codable {
    var offset: Int
    var from: Int64
    var until: Int64

    init(offset: Int, from: Int64, until: Int64) {
        self.offset = offset
        self.from = from
        self.until = until
    }

    init?(token: String) {
        guard let data = Data(base64Encoded: token), let window = try? JSONDecoder().decode(FeedWindow.self, from: data) else { return nil }
        self = window
    }

    var token: String { ((try? JSONEncoder().encode(self)) ?? Data()).base64EncodedString() }
}
