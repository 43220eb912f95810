import AppStoreSimulator
import Foundation
import GooglePlay
import Testing
import _CryptoExtras

/// A clock a test moves.
final class Clock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Date
    init(_ start: Date) { value = start }
    var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

/// clawback's Google client against the simulator over loopback: tokens, batches, and the whole-batch
/// failure Google's contract describes.
@Suite("Google Play: tokens and the Orders API")
struct OrdersClientTests {
    static let states = ["PROCESSED", "REFUNDED", "PARTIALLY_REFUNDED", "CANCELED", "PENDING_REFUND"]

    @Test("a service account's assertion buys a token, kept until it nears its end; a key Google does not list gets none, and nothing is answered")
    func tokens() async throws {
        try await GoogleClientFixture.with(orders: [GoogleClientFixture.order(1)]) { fixture in
            let provider = AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http)
            let first = try await provider.token()
            #expect(try await provider.token() == first)
            #expect(fixture.requests("google.token") == 1)

            // Kept until five minutes before its hour ends, then asked anew (here refused: the assertion's
            // time is the client's clock, an hour ahead of the simulator's).
            let start = Date()
            let clock = Clock(start)
            let timed = AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http) { clock.now }
            _ = try await timed.token()
            clock.now = start + 3_599 - 301
            _ = try await timed.token()
            #expect(fixture.requests("google.token") == 2)
            clock.now = start + 3_599 - 299
            await #expect(throws: GooglePlayError.self) { try await timed.token() }
            #expect(fixture.requests("google.token") == 3)

            // The same email, another key: Google refuses the assertion.
            let forged = try fixture.keyFile(key: try _RSA.Signing.PrivateKey(keySize: .bits2048))
            await #expect(throws: GooglePlayError.self) { try await AccessTokenProvider(key: forged, http: fixture.http).token() }
            let answers = try await fixture.orders(key: forged).orders([GoogleClientFixture.order(1).orderId])
            guard case .unanswered(let reason) = answers[GoogleClientFixture.order(1).orderId] else {
                Issue.record("a refused token answered \(String(describing: answers))")
                return
            }
            #expect(reason.contains("invalid_grant"))
        }
    }

    @Test("a revoked token is replaced once, and the call answered")
    func revokedToken() async throws {
        let order = GoogleClientFixture.order(7)
        try await GoogleClientFixture.with(orders: [order]) { fixture in
            let client = try fixture.orders()
            #expect(await client.orders([order.orderId]) == [order.orderId: .order(order.order)])
            fixture.google.revokeTokens()
            #expect(await client.orders([order.orderId]) == [order.orderId: .order(order.order)])
            #expect(fixture.requests("google.token") == 2)
        }
    }

    @Test("unknown and foreign orders in a batch are found by halving it: every other order still gets Google's answer, matched by id")
    func wholeBatchFailure() async throws {
        let known = (0..<300).map { GoogleClientFixture.order($0, state: Self.states[$0 % Self.states.count]) }
        let foreign = GoogleClientFixture.order(900, packageName: "com.other.game")
        try await GoogleClientFixture.with(
            orders: known + [foreign], extraPackages: [GooglePackageRecord(packageName: "com.other.game", serviceAccounts: [:])]
        ) { fixture in
            let unknown = ["GPA.0000-0000-0000-00001", "GPA.0000-0000-0000-00002", "not an order id & such"]
            // Spread over both halves at every level, so that halves are refused alike and the halving must
            // go on past its probes.
            var asked = known.map(\.orderId)
            for (offset, id) in zip([20, 160, 230, 290], unknown + [foreign.orderId]) { asked.insert(id, at: offset) }
            asked.insert(known[5].orderId, at: 100)  // asked twice: once
            let answers = try await fixture.orders().orders(asked)
            #expect(answers.count == known.count + unknown.count + 1)
            for record in known { #expect(answers[record.orderId] == .order(record.order)) }
            for id in unknown + [foreign.orderId] { #expect(answers[id] == .notFound) }
            // 4 bad ids among 304: at most 2·4·log2(304) calls beyond the first, and the 6 probes of the
            // one top-level split whose halves are both refused.
            #expect(fixture.requests("google.orders.batchGet") + fixture.requests("google.orders.get") <= 1 + 2 * 4 * 9 + 2 * 3)
        }
    }

    @Test("ids Google refuses alike, all of them: the halving stops after three ids of each half, a few calls instead of one per id")
    func refusedAlike() async throws {
        try await GoogleClientFixture.with(orders: [GoogleClientFixture.order(1)]) { fixture in
            // Junk ids (another app's numbering, say): every batch and every single id is refused 404 alike.
            let ids = (0..<1_000).map { "GPA.9999-\($0)" }
            let client = try fixture.orders()
            let answers = await client.orders(ids)
            #expect(Self.unanswered(answers, ids))
            // The batch, its two halves and three ids of each alone: halving down to every id would cost 1,999.
            #expect(client.statistics.requests - client.statistics.retries == 9)
            let reasons = Set(answers.values.compactMap { if case .unanswered(let reason) = $0 { reason } else { nil } })
            #expect(reasons.contains { $0.contains("in two halves alike") && $0.contains("asked again next run") })
        }
    }

    @Test("more than 1,000 orders are asked 1,000 at a time, each batch's long query sent as Google's clients send it")
    func largeBatches() async throws {
        let known = (0..<2_100).map { GoogleClientFixture.order($0) }
        try await GoogleClientFixture.with(orders: known) { fixture in
            let answers = try await fixture.orders().orders(known.map(\.orderId))
            #expect(answers.count == known.count)
            #expect(known.allSatisfy { answers[$0.orderId] == .order($0.order) })
            #expect(fixture.requests("google.orders.batchGet") == 3)
            #expect(fixture.requests("google.methodOverride") == 3)
        }
    }

    static func unanswered(_ answers: [String: OrderAnswer], _ ids: [String]) -> Bool {
        answers.count == ids.count && ids.allSatisfy { if case .unanswered = answers[$0] { true } else { false } }
    }

    @Test("an account the app does not list, an app Google does not know, or a 404 without Google's body: no answer, never 'not found'")
    func unreachable() async throws {
        let order = GoogleClientFixture.order(3, packageName: "com.other.game")
        let ids = [order.orderId, "GPA.1"]
        try await GoogleClientFixture.with(
            orders: [order],
            extraPackages: [GooglePackageRecord(packageName: "com.other.game", serviceAccounts: [:])]
        ) { fixture in
            // The Play Console has not granted this account the app: 401 permissionDenied, a token asked again once.
            let denied = try await fixture.orders(packageName: "com.other.game").orders(ids)
            #expect(Self.unanswered(denied, ids))
            let unknownApp = try await fixture.orders(packageName: "com.not.on.play").orders(ids)
            #expect(Self.unanswered(unknownApp, ids))
            // A wrong base URL: the server's bare 404 for a path it does not serve.
            let elsewhere = OrdersClient(
                packageName: GoogleClientFixture.packageName, baseURL: fixture.baseURL + "/elsewhere",
                tokens: AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http), http: fixture.http, retries: 0)
            #expect(Self.unanswered(await elsewhere.orders(ids), ids))
        }
        // A simulator without Google's side answers 404 to everything.
        try await GoogleClientFixture.withoutGoogle { baseURL, http in
            let key = try GoogleClientFixture.keyFile(tokenBase: baseURL)
            let client = OrdersClient(
                packageName: GoogleClientFixture.packageName, baseURL: baseURL, tokens: AccessTokenProvider(key: key, http: http), http: http,
                retries: 0)
            #expect(Self.unanswered(await client.orders(ids), ids))
        }
    }

    @Test("only unknown orders in a call: a 404 for each cannot be told from an unreachable app, so none is 'not found'")
    func onlyUnknown() async throws {
        try await GoogleClientFixture.with(orders: [GoogleClientFixture.order(1)]) { fixture in
            let ids = ["GPA.0000-0000-0000-00001", "GPA.0000-0000-0000-00002"]
            let answers = try await fixture.orders().orders(ids)
            #expect(Self.unanswered(answers, ids))
        }
    }

    @Test("Google failing for a while is asked again; still failing, or answering short, wrong or twice, is no answer for the orders concerned")
    func faults() async throws {
        let known = (0..<10).map { GoogleClientFixture.order($0) }
        let ids = known.map(\.orderId)
        try await GoogleClientFixture.with(orders: known) { fixture in
            let patient = OrdersClient(
                packageName: GoogleClientFixture.packageName, baseURL: fixture.baseURL,
                tokens: AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http), http: fixture.http, retries: 2,
                backoff: .milliseconds(1))
            fixture.google.setFaults(GoogleFaults(failures: [503, 429]))
            #expect(await patient.orders(ids).count { if case .order = $0.value { true } else { false } } == 10)
            fixture.google.setFaults(GoogleFaults(failures: [500, 500, 500]))
            #expect(Self.unanswered(await patient.orders(ids), ids))

            let client = try fixture.orders()
            fixture.google.setFaults(GoogleFaults(batchFault: .omitOne))
            var answers = await client.orders(ids)
            #expect(answers.values.count { if case .unanswered = $0 { true } else { false } } == 1)
            #expect(answers.values.count { if case .order = $0 { true } else { false } } == 9)
            fixture.google.setFaults(GoogleFaults(batchFault: .duplicateDifferent))
            answers = await client.orders(ids)
            #expect(answers.values.count { if case .unanswered = $0 { true } else { false } } == 1)
            fixture.google.setFaults(GoogleFaults(batchFault: .malformed))
            #expect(Self.unanswered(await client.orders(ids), ids))
        }
    }

    @Test("a run's call budget: once spent nothing more is sent, and the orders left are unanswered, saying why; unknown orders cost calls")
    func budget() async throws {
        let known = (0..<200).map { GoogleClientFixture.order($0) }
        // Two unknown orders: isolating them takes about 2·log2(batch) calls each.
        let ids = known.map(\.orderId) + ["GPA.0000-0000-0000-00001", "GPA.0000-0000-0000-00002"]
        try await GoogleClientFixture.with(orders: known) { fixture in
            let unlimited = try fixture.orders()
            let all = await unlimited.orders(ids)
            #expect(all.values.count { if case .order = $0 { true } else { false } } == 200)
            let needed = unlimited.statistics.requests
            #expect(needed > 10, "the halving's calls: \(needed)")

            let allowance = CallAllowance(budget: 5, perSecond: nil)
            let tight = OrdersClient(
                packageName: GoogleClientFixture.packageName, baseURL: fixture.baseURL,
                tokens: AccessTokenProvider(key: try fixture.keyFile(), http: fixture.http), http: fixture.http, allowance: allowance)
            let answers = await tight.orders(ids)
            #expect(tight.statistics.requests == 5 && allowance.used == 5, "nothing sent past the budget")
            #expect(answers.count == ids.count)
            let spent = answers.values.compactMap { if case .unanswered(let reason) = $0 { reason } else { nil } }
            // Those left unasked say why (an answer slow under load may be unanswered for its own reason).
            #expect(spent.contains { $0.contains("call budget (5 calls) is spent") })
            #expect(!answers.values.contains(.notFound), "an order left unasked is never 'not found'")
        }
    }

    @Test("the pace: calls leave no faster than it allows, whatever asks at once")
    func pace() async throws {
        let allowance = CallAllowance(budget: nil, perSecond: 50)
        let start = ContinuousClock.now
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<6 { group.addTask { await allowance.take() } }
        }
        // Six calls at 50 a second: the sixth leaves five intervals (100 ms) after the first, at the earliest.
        #expect(ContinuousClock.now - start >= .milliseconds(95))
        #expect(allowance.used == 6)
    }
}
