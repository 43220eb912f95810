import Foundation
import Testing

@testable import AppStoreSimulator

/// The simulator's Stripe lists are served from an index sorted once per world; these hold every page
/// walk to what the world itself says: each object of the kind within the bounds, newest first (ties by
/// id), whatever the page size, bounds and filter, and the world's changes seen at once.
@Suite("the simulator's Stripe lists")
struct StripeListTests {
    static let key = "rk_test_lists"

    /// One object of a list as the world holds it: what a walk must return, in order.
    struct Reference: Equatable {
        let id: String
        let created: Int64
        let charge: String?
    }

    static func world() -> StripeWorld {
        let end = Date(timeIntervalSince1970: 1_790_000_000)
        // Many payments a second apart share a `created` second, so ties by id are walked too.
        var output = StripeWorldGenerator.generate(
            payments: 600, start: end - 400, end: end, refundRate: 0.4, disputeRate: 0.3, key: key, seed: 11)
        output.world.keys.insert(key)
        return output.world
    }

    static func references(_ path: String, in world: StripeWorld) -> [Reference] {
        world.payments.values.flatMap { payment -> [Reference] in
            let latest = payment.latestCharge?.id
            func reference(_ id: String, _ created: Date, _ charge: String?) -> Reference {
                Reference(id: id, created: Int64(created.timeIntervalSince1970.rounded(.down)), charge: charge)
            }
            switch path {
            case "charges": return payment.charges.map { reference($0.id, $0.created, $0.id) }
            case "refunds": return payment.refunds.map { reference($0.id, $0.created, $0.charge ?? latest) }
            case "disputes": return payment.disputes.map { reference($0.id, $0.created, $0.charge ?? latest) }
            default: return (payment.fraudWarnings ?? []).map { reference($0.id, $0.created, latest) }
            }
        }
        .sorted { ($0.created, $0.id) > ($1.created, $1.id) }
    }

    /// Every page of `path` under `query`, `limit` a page, as Stripe's clients walk it.
    static func walk(_ simulator: StripeSimulator, _ path: String, query: [(String, String)], limit: Int) throws -> [String] {
        var ids: [String] = []
        var after: String?
        for _ in 0..<10_000 {
            var pageQuery = query + [("limit", String(limit))]
            if let after { pageQuery.append(("starting_after", after)) }
            let reply = simulator.handle(
                SimulatorRequest(method: "GET", path: "/v1/" + path, query: pageQuery, headers: [("Authorization", "Bearer \(key)")]))
            guard case .respond(200, _, let body) = reply,
                let page = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                let data = page["data"] as? [[String: Any]], let hasMore = page["has_more"] as? Bool
            else {
                Issue.record("\(path) \(pageQuery) was not answered with a list: \(reply)")
                return ids
            }
            let pageIDs = data.compactMap { $0["id"] as? String }
            #expect(pageIDs.count <= limit)
            ids += pageIDs
            guard hasMore else { return ids }
            guard let last = pageIDs.last else {
                Issue.record("has_more after an empty page of \(path)")
                return ids
            }
            after = last
        }
        Issue.record("\(path) never ended")
        return ids
    }

    @Test("a walk of every page is the world's objects within the bounds and of the charge asked, newest first, ties by id")
    func walksMatchTheWorld() throws {
        let world = Self.world()
        let simulator = StripeSimulator(world: world)
        var random = SeededGenerator(seed: 5)
        for path in ["charges", "refunds", "disputes", "radar/early_fraud_warnings"] {
            let all = Self.references(path, in: world)
            try #require(all.count > 20, "the world has too few \(path) to walk")
            for _ in 0..<12 {
                // Bounds drawn around the objects' own seconds, so that each bound's edge is an object's.
                let pick = { all[Int.random(in: 0..<all.count, using: &random)].created }
                let (low, high) = (pick(), pick())
                let (lower, upper) = (min(low, high), max(low, high))
                let bounds: [(String, String, (Int64) -> Bool)] = [
                    ("created[gte]", String(lower), { $0 >= lower }), ("created[gt]", String(lower), { $0 > lower }),
                    ("created[lte]", String(upper), { $0 <= upper }), ("created[lt]", String(upper), { $0 < upper }),
                ]
                let chosen = bounds.filter { _ in Bool.random(using: &random) }
                var query = chosen.map { ($0.0, $0.1) }
                var expected = all.filter { reference in chosen.allSatisfy { $0.2(reference.created) } }
                if Int.random(in: 0..<4, using: &random) == 0, let charge = all[Int.random(in: 0..<all.count, using: &random)].charge {
                    query.append(("charge", charge))
                    expected = expected.filter { $0.charge == charge }
                }
                let limit = [1, 3, 10, 100][Int.random(in: 0..<4, using: &random)]
                #expect(try Self.walk(simulator, path, query: query, limit: limit) == expected.map(\.id), "\(path) \(query) limit \(limit)")
            }
        }
    }

    @Test("a change to the world is in the next page asked, and a starting_after the list no longer holds is refused")
    func changesAreSeen() throws {
        let simulator = StripeSimulator(world: Self.world())
        let before = try Self.walk(simulator, "refunds", query: [], limit: 100)
        let payment = try #require(simulator.world.payments.values.filter { $0.status == "succeeded" }.min { $0.id < $1.id })
        simulator.update { world in
            world.payments[payment.id]?.refunds.append(
                StripeRefundRecord(id: "re_late", amount: 1, created: Date(timeIntervalSince1970: 1_800_000_000)))
        }
        #expect(try Self.walk(simulator, "refunds", query: [], limit: 100) == ["re_late"] + before)
        let reply = simulator.handle(
            SimulatorRequest(
                method: "GET", path: "/v1/refunds", query: [("created[lt]", "1790000000"), ("starting_after", "re_late")],
                headers: [("Authorization", "Bearer \(Self.key)")]))
        guard case .respond(404, _, _) = reply else {
            Issue.record("a starting_after outside the bounds was answered \(reply)")
            return
        }
    }
}
