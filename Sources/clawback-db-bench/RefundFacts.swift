import Foundation
import Postgres
import Storage

/// B9: the refund-request job's reads over a big grants table. Loads `grantCount` grants over the last five
/// months (not measured; every fourth a renewal credited under an original transaction id of its own), then
/// times `RefundRequestStore.facts` for `requestCount` requests as the hourly job asks them: a quarter about a
/// granted purchase by its transaction id, a quarter by its original transaction id, and half about a
/// purchase with no grant yet (the late grant asked about again every hour, which also looks up its month's
/// partition). Then, as a same-run reference, the same lookups for a few requests without the index of
/// migration 0010, and the time to build that index (how long `clawback migrate` holds the grants table).
func benchmarkRefundFacts(grantCount: Int, requestCount: Int) throws {
    let connection = try benchConnection()
    try Migrator().migrate(on: DatabaseConnection(connection))
    let now = Date()
    let start = now - 150 * 86_400
    try connection.query("SELECT clawback.ensure_grant_partitions(\(start), \(now + 31 * 86_400))")
    let loadStart = ContinuousClock.now
    try connection.execute(
        """
        INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
            units_granted, purchased_at)
        SELECT (2000000000000000 + i)::text,
            CASE WHEN i % 4 = 3 THEN (1000000000000000 + i)::text ELSE (2000000000000000 + i)::text END,
            'com.bench.game', 'gems_600', 'Production', 'player-' || (i % 50000), 600,
            \(start)::timestamptz + (\(now)::timestamptz - \(start)::timestamptz) * (i::float8 / \(grantCount)::float8)
        FROM generate_series(0, \(grantCount) - 1) AS i
        ON CONFLICT DO NOTHING
        """)
    try connection.execute("ANALYZE clawback.grants")
    let loadSeconds = seconds(since: loadStart)

    func lookups(_ count: Int) throws -> (seconds: Double, delivered: Int, notDelivered: Int) {
        var delivered = 0
        var notDelivered = 0
        let begin = ContinuousClock.now
        for k in 0..<count {
            let i = (k * 7_919) % grantCount
            let (transactionID, original): (String, String?) =
                switch k % 4 {
                case 0: (String(2_000_000_000_000_000 + i), nil)
                case 1: ("late-\(k)", String(1_000_000_000_000_000 + (i - i % 4 + 3) % grantCount))
                default: (String(9_100_000_000_000_000 + k), nil)
                }
            let facts = try RefundRequestStore.facts(
                transactionID: transactionID, originalTransactionID: original, bundleID: "com.bench.game", purchasedAt: now - 86_400,
                grantsCompleteSince: start, on: DatabaseConnection(connection))
            switch facts.delivery {
            case .delivered: delivered += 1
            case .notDelivered: notDelivered += 1
            case .unknown: break
            }
        }
        return (seconds(since: begin), delivered, notDelivered)
    }

    let indexed = try lookups(requestCount)
    // The same-run reference: without the index, every lookup by original transaction id reads every partition.
    try connection.execute("DROP INDEX clawback.grants_original_transaction_id")
    let sample = min(requestCount, 20)
    let unindexed = try lookups(sample)
    let buildStart = ContinuousClock.now
    try connection.execute("CREATE INDEX grants_original_transaction_id ON clawback.grants (original_transaction_id)")
    let buildSeconds = seconds(since: buildStart)

    let granted = (0..<requestCount).filter { $0 % 4 < 2 }.count
    guard indexed.delivered == granted, indexed.notDelivered == requestCount - granted else {
        throw BenchFailure(
            "the lookups found \(indexed.delivered) grants and \(indexed.notDelivered) missing ones; expected \(granted) and \(requestCount - granted)"
        )
    }
    try printJSON([
        "scenario": "B9", "grants": grantCount, "requests": requestCount, "load_seconds": loadSeconds,
        "seconds": indexed.seconds, "ms_per_request": indexed.seconds * 1000 / Double(requestCount),
        "delivered": indexed.delivered, "not_delivered": indexed.notDelivered,
        "unindexed_ms_per_request": unindexed.seconds * 1000 / Double(sample), "unindexed_sample": sample,
        "index_build_seconds": buildSeconds,
    ])
}
