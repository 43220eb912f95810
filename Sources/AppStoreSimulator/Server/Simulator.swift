public import Foundation
import Locking

/// How the simulator behaves apart from its world and faults.
public struct SimulatorConfiguration: Sendable {
    /// Production requests per second per endpoint (sandbox 10%); nil serves without limits.
    public var rateLimits: [String: Double]?
    /// How far back Get Notification History reaches: Apple's 180 days in production, 30 in sandbox.
    public var notificationHistoryDays: (production: Double, sandbox: Double)
    /// The simulator's clock (tests move it).
    public var clock: @Sendable () -> Date
    /// Seeds the refund decisions (`RefundDecisions`): the same seed, answers and world decide alike.
    public var decisionSeed: UInt64
    /// For rehearsals and the demo: a request that got an answer is decided this long after the answer,
    /// instead of 13 hours after the request (nil: Apple's pace).
    public var decisionDelayAfterAnswer: TimeInterval?

    public init(
        rateLimits: [String: Double]? = SimulatorConfiguration.appleRates,
        notificationHistoryDays: (production: Double, sandbox: Double) = (180, 30),
        clock: @escaping @Sendable () -> Date = Date.init, decisionSeed: UInt64 = 0, decisionDelayAfterAnswer: TimeInterval? = nil
    ) {
        self.decisionDelayAfterAnswer = decisionDelayAfterAnswer
        self.rateLimits = rateLimits
        self.notificationHistoryDays = notificationHistoryDays
        self.clock = clock
        self.decisionSeed = decisionSeed
    }

    /// Apple's published production rates (requests per second), by the simulator's endpoint names.
    public static let appleRates: [String: Double] = [
        "transactionInfo": 50, "transactionHistory": 50, "notificationHistory": 50, "refundHistory": 10, "lookUpOrderID": 10,
        "sendConsumptionInformation": 50,
    ]
}

/// The App Store as clawback and Apple's own libraries see it: the Server API endpoints, /verifyReceipt,
/// bearer-token checks, rate limits and injected faults, over an in-memory world. Thread-safe; the HTTP
/// server calls `handle` from its event loops.
public final class Simulator: Sendable {
    public let chain: SigningChain
    /// The chain's leaf signer, its header encoded once (nil only if the chain cannot be serialized).
    private let leafSigner: PreparedSigner?
    let configuration: SimulatorConfiguration
    private let state: Locked<(world: World, faults: FaultPlan)>
    let authenticator = BearerAuthenticator()
    let limits: SimulatedRateLimits
    public let stats = SimulatorStats()
    let hostile: HostileSigner
    private let attempts = Locked<[UInt64: Int]>([:])
    /// Every consumption answer accepted, in arrival order.
    private let answers = Locked<[ReceivedConsumptionAnswer]>([])
    /// Google Play's side, when the simulator was given a Google world.
    public let google: GooglePlaySimulator?
    /// Stripe's side, when the simulator was given a web shop's world.
    public let stripe: StripeSimulator?

    public init(
        world: World, chain: SigningChain, faults: FaultPlan = .none, configuration: SimulatorConfiguration = .init(),
        google: GooglePlayWorld? = nil, stripe: StripeWorld? = nil
    ) {
        self.chain = chain
        leafSigner = try? chain.prepared()
        self.configuration = configuration
        state = Locked((world, faults))
        limits = SimulatedRateLimits(productionRates: configuration.rateLimits)
        hostile = HostileSigner(chain: chain)
        let stats = stats
        self.google = google.map { GooglePlaySimulator(world: $0, stats: stats, clock: configuration.clock) }
        self.stripe = stripe.map { StripeSimulator(world: $0, stats: stats, clock: configuration.clock) }
    }

    public var world: World { state.withLock { $0.world } }
    public var faults: FaultPlan { state.withLock { $0.faults } }

    public func update(_ lines: [WorldLine]) {
        let updated = world.updating(with: lines)
        state.withLock { $0.world = updated }
    }

    public func setFaults(_ faults: FaultPlan) {
        state.withLock { $0.faults = faults }
        attempts.withLock { $0.removeAll() }
    }

    var now: Date { configuration.clock() }

    /// The consumption answers accepted so far, in arrival order.
    public var consumptionAnswers: [ReceivedConsumptionAnswer] { answers.withLock { $0 } }

    func record(_ answer: ReceivedConsumptionAnswer) { answers.withLock { $0.append(answer) } }

    /// Decides the refund requests whose time has come, each from the latest answer received for its
    /// transaction before the decision (none: Apple decides without the developer's view).
    func settleDecisions(now: Date) {
        var due = world.undecidedRequests.prefix { $0.due <= now }.map { ($0.due, $0.transactionID) }
        let received = answers.withLock { $0 }
        if let quick = configuration.decisionDelayAfterAnswer {
            due += received.filter { $0.solicited && $0.receivedAt + quick <= now }.map { ($0.receivedAt + quick, $0.transactionId) }
        }
        guard !due.isEmpty else { return }
        state.withLock { state in
            var decided: [String: TransactionRecord] = [:]
            for (when, id) in due.sorted(by: { $0.0 < $1.0 }) where decided[id] == nil {
                guard let record = state.world.transactions[id], let request = record.refundRequest, request.decision == nil else { continue }
                let answer = received.last { $0.transactionId == id && $0.receivedAt <= when && $0.receivedAt >= request.date }
                decided[id] = RefundDecisions.decide(record, answer: answer?.body, at: when, seed: configuration.decisionSeed)
            }
            guard !decided.isEmpty else { return }
            state.world = state.world.updating(with: decided.values.map { .transaction($0) })
        }
    }

    // MARK: - Dispatch

    public func handle(_ request: SimulatorRequest) -> SimulatorReply {
        if request.path.hasPrefix("/simulator/") { return control(request) }
        if GooglePlaySimulator.serves(request.path) {
            guard let google else { return .respond(status: 404, headers: [], body: []) }
            return google.handle(request)
        }
        if StripeSimulator.serves(request.path) {
            guard let stripe else { return .respond(status: 404, headers: [], body: []) }
            return stripe.handle(request)
        }
        var path = Substring(request.path)
        var environment = "Production"
        if path.hasPrefix("/sandbox/") {
            environment = "Sandbox"
            path = path.dropFirst("/sandbox".count)
        } else if path.hasPrefix("/production/") {
            path = path.dropFirst("/production".count)
        }
        if path == "/verifyReceipt" {
            stats.count(endpoint: "verifyReceipt")
            return request.method == "POST" ? verifyReceipt(request, environment: environment) : .json(200, Array(#"{"status":21000}"#.utf8))
        }
        guard let route = Route(method: request.method, path: path) else {
            stats.count(endpoint: "unknown")
            return .respond(status: 404, headers: [], body: [])
        }
        stats.count(endpoint: route.endpoint)
        let now = self.now
        settleDecisions(now: now)
        let (world, faults) = state.withLock { ($0.world, $0.faults) }
        guard let caller = authenticator.authenticate(request.header("Authorization"), world: world, now: now) else {
            stats.count(status: 401)
            return .respond(status: 401, headers: [], body: [])
        }
        let reply = respond(
            route, request: request, bundleID: caller.bundleID, environment: environment, world: world,
            faults: faults, now: now)
        if let status = reply.status { stats.count(status: status) }
        return reply
    }

    private func respond(
        _ route: Route, request: SimulatorRequest, bundleID: String, environment: String, world: World, faults: FaultPlan,
        now: Date
    ) -> SimulatorReply {
        var fault: FaultPlan.Fault?
        if faults.injectsAnything {
            if faults.unauthorizedBundles.contains(bundleID) || faults.unauthorizedEnvironments.contains(environment) {
                stats.count(fault: .unauthorized)
                return .respond(status: 401, headers: [], body: [])
            }
            if faults.rateLimitBurstEverySeconds > 0 {
                let period = faults.rateLimitBurstEverySeconds
                let phase = now.timeIntervalSince1970.truncatingRemainder(dividingBy: period)
                if phase * 1000 < Double(faults.rateLimitBurstMilliseconds) {
                    stats.count(fault: .rateLimitBurst)
                    let until = now + (Double(faults.rateLimitBurstMilliseconds) / 1000 - phase)
                    return rateLimited(until: until)
                }
            }
            fault = faults.fault(for: draw(request, seed: faults.seed))
        }
        if let retryAt = limits.admit(bundleID: bundleID, environment: environment, endpoint: route.endpoint, now: now) {
            stats.count(fault: .rateLimit)
            return rateLimited(until: retryAt)
        }
        let signer: @Sendable ([UInt8]) -> String
        if fault == .hostile {
            let kind = faults.hostileKind
            signer = { [hostile] payload in hostile.sign(payload, kind: kind) }
        } else {
            signer = { [leafSigner] payload in (try? leafSigner?.sign(payload: payload)) ?? "" }
        }
        var reply = route.answer(
            self, request: request, bundleID: bundleID, environment: environment, world: world, now: now,
            sign: signer)
        if let fault {
            stats.count(fault: fault)
            reply = apply(fault, to: reply, faults: faults)
        }
        if faults.latencyMilliseconds > 0 || faults.jitterMilliseconds > 0 {
            let jitter = faults.jitterMilliseconds > 0 ? Int((draw(request, seed: faults.seed &+ 7) * 2 - 1) * Double(faults.jitterMilliseconds)) : 0
            reply = .delayed(milliseconds: max(0, faults.latencyMilliseconds + jitter), reply)
        }
        return reply
    }

    private func apply(_ fault: FaultPlan.Fault, to reply: SimulatorReply, faults: FaultPlan) -> SimulatorReply {
        switch fault {
        case .internalError: return .appleError(500, 5_000_000, "An unknown error occurred.")
        case .retryableError: return .appleError(500, 5_000_001, "An unknown error occurred. Please try again.")
        case .reset: return .reset
        case .truncated:
            guard case .respond(let status, let headers, let body) = reply else { return reply }
            return .truncated(status: status, headers: headers, body: body)
        case .malformed:
            return .json(200, Array(#"{"signedTransactionInfo": "eyJhbGciOiJFUzI1NiJ9.!!! not json"#.utf8))
        case .stall: return .delayed(milliseconds: Int(faults.stallSeconds * 1000), reply)
        case .hostile, .unauthorized, .rateLimitBurst, .rateLimit: return reply
        }
    }

    func rateLimited(until: Date) -> SimulatorReply {
        // Apple documents Retry-After as a UNIX time in milliseconds.
        return .appleError(
            429, 4_290_000, "Rate limit exceeded.", headers: [("Retry-After", String(Int64((until.timeIntervalSince1970 * 1000).rounded(.up))))])
    }

    /// A deterministic number in [0, 1) for this request and its attempt: same seed, same requests, same faults.
    private func draw(_ request: SimulatorRequest, seed: UInt64) -> Double {
        var hash = StableHash()
        hash.combine(seed)
        hash.combine(request.method)
        hash.combine(request.path)
        for (name, value) in request.query {
            hash.combine(name)
            hash.combine(value)
        }
        for byte in request.body { hash.combine(byte) }
        let key = hash.value
        let attempt = attempts.withLock { attempts -> Int in
            let attempt = attempts[key, default: 0]
            attempts[key] = attempt + 1
            return attempt
        }
        hash.combine(UInt64(attempt))
        return hash.unitInterval
    }
}

/// Request, status and fault counts, for `/simulator/stats` and the benchmark.
public final class SimulatorStats: Sendable {
    private let counts = Locked<[String: Int]>([:])

    public init() {}

    func count(endpoint: String) { counts.withLock { $0["requests." + endpoint, default: 0] += 1 } }
    func count(status: Int) { counts.withLock { $0["status.\(status)", default: 0] += 1 } }
    func count(fault: FaultPlan.Fault) { counts.withLock { $0["fault.\(fault.rawValue)", default: 0] += 1 } }

    public var snapshot: [String: Int] { counts.withLock { $0 } }

    public func reset() { counts.withLock { $0.removeAll() } }
}
