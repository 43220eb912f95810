import AppStore
import AppStoreSimulator
public import ArgumentParser
import Foundation

/// `store-simulator`: the local stand-in for every store clawback asks (the App Store, Google Play and its
/// Pub/Sub), run by the demo, the tests, the benchmark and a studio's rehearsals. `appstore-simulator`, its
/// name until 1.2, runs the same command for one release more.
public struct StoreSimulatorCommand: AsyncParsableCommand {
    public init() {}

    /// Parses the process's arguments and runs the subcommand, as `@main` would (an executable's top-level code
    /// calls this: there, `main()` would name ParsableCommand's synchronous one).
    public static func runFromCommandLine() async {
        let main: () async -> Void = Self.main
        await main()
    }

    public static let configuration = CommandConfiguration(
        commandName: "store-simulator",
        abstract:
            "A local stand-in for the stores clawback asks (Apple's App Store Server API and verifyReceipt, Google Play's APIs and Pub/Sub, Stripe's payments), for demos, tests and rehearsals.",
        discussion: """
            ENDPOINTS (plain HTTP/1.1; a path prefix /sandbox selects the sandbox, none or /production the production side):
              GET  /inApps/v1/transactions/{id}        Get Transaction Info
              GET  /inApps/v2/history/{id}             Get Transaction History v2 (startDate, endDate, productType,
                                                       productId, revoked, sort, revision; 20 a page)
              GET  /inApps/v2/refund/lookup/{id}       Get Refund History v2 (revision; 20 a page)
              POST /inApps/v1/notifications/history    Get Notification History (REFUND, REFUND_REVERSED, REVOKE,
                                                       CONSUMPTION_REQUEST, REFUND_DECLINED; paginationToken)
              PUT  /inApps/v2/transactions/consumption/{id}  Send Consumption Information (202; Apple's 400 checks)
              GET  /inApps/v1/lookup/{orderId}         Look Up Order ID (production only)
              POST /verifyReceipt                      legacy verifyReceipt (21007 / 21008 between environments)
            Bearer JWTs are checked like Apple does (ES256, kid of the app, iss, aud, bid, exp <= iat + 60 min): 401
            otherwise. Rate limits are Apple's (50/s, 10/s for refund history and order lookup, sandbox 10%), answered
            with 429, errorCode 4290000 and Retry-After (UNIX milliseconds).

            GOOGLE PLAY (with --google-world): POST /google/token (a service account's RS256 JWT bearer grant),
              GET  /androidpublisher/v3/applications/{package}/orders/{orderId}      orders.get
              GET  /androidpublisher/v3/applications/{package}/orders:batchGet       orders.batchget (orderIds, 1 to
                   1,000 distinct; one unknown or foreign id fails the whole request with 404; a long query may come
                   as a POST form with X-HTTP-Method-Override: GET, as Google's clients send it)
              GET  /androidpublisher/v3/applications/{package}/purchases/products/{productId}/tokens/{token}
                   purchases.products.get (the purchase record: quantity, refundable quantity, purchase state)

            STRIPE (with --stripe-world; Authorization: Bearer with one of the world's keys):
              GET  /v1/payment_intents/{id}   GET /v1/charges/{id}
              GET  /v1/charges, /v1/refunds, /v1/disputes   lists, newest first (limit 1 to 100, starting_after,
                   created[gte|gt|lte|lt], charge, payment_intent), Stripe's error bodies (404 resource_missing)

            CONTROL: GET /simulator/health, GET|DELETE /simulator/stats, GET /simulator/root.pem,
            GET|PUT /simulator/faults (JSON, fields as the fault flags in camelCase: {"resetShare":0.02}),
            POST /simulator/world (JSONL lines added or replacing transactions and apps),
            GET /simulator/consumption-answers (every consumption answer accepted, in arrival order).

            REFUND REQUESTS: a transaction's "refundRequest" ({"date","reason","decision","decidedAt"}) is served as
            CONSUMPTION_REQUEST at its date; an undecided one is decided 13 hours later (or --decision-delay-after-answer
            seconds after its answer) from the answer received: more refunds for undelivered goods or GRANT_*, fewer
            for consumed goods with DECLINE (deterministic per transaction and --decision-seed). Then REFUND (the
            transaction is refunded, prorated for GRANT_PRORATED) or REFUND_DECLINED.

            WORLD FILE (JSONL), one record per line:
              {"record":"app","bundleId":"com.studio.game","appAppleId":6450000001,"issuerId":"<uuid>",
               "keys":[{"keyId":"SIMKEY0001","publicKey":"-----BEGIN PUBLIC KEY-----\\n..."}],"sharedSecret":"..."}
              {"transactionId":"2000000000000001","originalTransactionId":"2000000000000001","customerId":"c-1",
               "bundleId":"com.studio.game","productId":"gems_600","type":"Consumable","quantity":1,"priceMilli":4990,
               "currency":"USD","storefront":"USA","environment":"Production","purchaseDate":"2026-10-03T12:00:00Z",
               "appAccountToken":"<uuid>","orderId":"MK5TTTVWJH",
               "refund":{"date":"2026-10-20T08:00:00Z","reason":1,"type":"REFUND_PRORATED","percentage":50000,
                         "reversedDate":"2026-10-25T08:00:00Z"}}
            `store-simulator generate` writes one, with the grants a game would hold and the apps' .p8 keys.

            POINTING CLIENTS AT IT:
              clawback:  apple base URL http://127.0.0.1:PORT (production) and http://127.0.0.1:PORT/sandbox, and the
                         simulator's root (--root-out FILE or STATE/root.pem) as a trusted root.
              Apple's libraries: construct the client for any environment, then set its base URL to the simulator
                         (Python: client._base_url = "http://127.0.0.1:PORT"); verify with SignedDataVerifier trusting
                         the simulator's root.der.
            """,
        subcommands: [Serve.self, Generate.self, GenerateGoogle.self, GenerateStripe.self, Token.self],
        defaultSubcommand: Serve.self)
}

/// The world options shared by `serve --generate` and `generate`.
struct GeneratorOptions: ParsableArguments {
    @Option(help: "Bundle id of a generated app (repeatable).")
    var bundle: [String] = []
    @Option(help: "Calendar months of purchases before the current month.")
    var months = 3
    @Option(help: "Share of purchases refunded.")
    var refundRate = 0.03
    @Option(help: "Share of refunds that are prorated.")
    var proratedShare = 0.3
    @Option(help: "Share of refunds later reversed.")
    var reversalShare = 0.15
    @Option(help: "Share of grants Apple does not know.")
    var unknownShare = 0.003
    @Option(help: "Share of grants that disagree with Apple.")
    var mismatchShare = 0.002
    @Option(help: "Share of purchases in the sandbox.")
    var sandboxShare = 0.0
    @Option(help: "Share of refunds the customer asked for with a refund request (CONSUMPTION_REQUEST first).")
    var refundRequestShare = 0.0
    @Option(help: "Share of decided refund requests Apple declined (REFUND_DECLINED).")
    var declinedRequestShare = 0.0
    @Option(help: "Refund requests still open now (sent in the last 11 hours, awaiting an answer).")
    var openRefundRequests = 0
    @Option(help: "Share of open refund requests whose purchase the game never granted.")
    var undeliveredShare = 0.0
    @Option(help: "Seed: the same seed gives the same world, keys and grants.")
    var seed: UInt64 = 42

    func options(purchases: Int, now: Date = Date()) -> WorldGenerator.Options {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let monthStart = calendar.dateInterval(of: .month, for: now)?.start ?? now
        let start = calendar.date(byAdding: .month, value: -months, to: monthStart) ?? monthStart
        var options = WorldGenerator.Options(start: start, end: monthStart, now: now)
        options.purchases = purchases
        if !bundle.isEmpty { options.bundleIDs = bundle }
        options.refundRate = refundRate
        options.proratedShare = proratedShare
        options.reversalShare = reversalShare
        options.unknownShare = unknownShare
        options.mismatchShare = mismatchShare
        options.sandboxShare = sandboxShare
        options.refundRequestShare = refundRequestShare
        options.declinedRequestShare = declinedRequestShare
        options.openRefundRequests = openRefundRequests
        options.undeliveredShare = undeliveredShare
        options.seed = seed
        return options
    }
}

struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a world (world.jsonl), the game's grants (grants.jsonl), the apps' keys (keys/*.p8) and apps.json.")

    @Option(help: "Number of purchases.")
    var purchases = 3000
    @Option(help: "Directory to write into.")
    var out: String
    @OptionGroup var generator: GeneratorOptions

    func run() throws {
        let output = WorldGenerator.generate(generator.options(purchases: purchases))
        try GeneratedFiles.write(output, to: out)
        print("wrote \(output.transactions.count) Apple transactions and \(output.grants.count) grants to \(out)")
    }
}

struct GenerateGoogle: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-google",
        abstract:
            "Write a Google Play world (google-world.jsonl), the game's grants of it (google-grants.jsonl) and its service account's key file (google-service-account.json)."
    )

    @Option(help: "Number of one-time purchases.")
    var orders = 3000
    @Option(help: "Directory to write into.")
    var out: String
    @Option(help: "Calendar months of purchases before the current month.")
    var months = 3
    @Option(help: "Share of orders refunded (whole or in part; some charged back).")
    var refundRate = 0.03
    @Option(help: "Share of orders beside which the game also granted an order Google never had.")
    var unknownShare = 0.002
    @Option(help: "Where the simulator will listen: the key file's token_uri is this URL's /google/token.")
    var tokenBaseURL = "http://127.0.0.1:8080"
    @Option(help: "Seed: the same seed gives the same orders (the service account's key is new each time).")
    var seed: UInt64 = 7

    func run() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let end = calendar.dateInterval(of: .month, for: Date())?.start ?? Date()
        let start = calendar.date(byAdding: .month, value: -months, to: end) ?? end
        let output = try GooglePlayWorldGenerator.generate(
            orders: orders, start: start, end: end, refundRate: refundRate, unknownShare: unknownShare, seed: seed,
            tokenBaseURL: tokenBaseURL)
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try output.world.write(to: out + "/google-world.jsonl")
        let keyPath = out + "/google-service-account.json"
        guard FileManager.default.createFile(atPath: keyPath, contents: output.keyFile, attributes: [.posixPermissions: 0o600]) else {
            throw ValidationError("cannot write \(keyPath)")
        }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        try GeneratedFiles.writeLines(output.grants.map { try encoder.encode($0) }, to: out + "/google-grants.jsonl")
        print("wrote \(output.world.orders.count) Google Play orders, \(output.grants.count) grants and a service account key to \(out)")
    }
}

struct GenerateStripe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-stripe",
        abstract: "Write a web shop's Stripe world (stripe-world.json), the game's grants of it (stripe-grants.jsonl) and its key (stripe.key).")

    @Option(help: "Number of payments.")
    var payments = 3000
    @Option(help: "Directory to write into.")
    var out: String
    @Option(help: "Calendar months of payments before the current month.")
    var months = 3
    @Option(help: "Share of payments refunded (in full or in half; some refunds pending, failed or canceled).")
    var refundRate = 0.1
    @Option(help: "Share of payments disputed, at every stage.")
    var disputeRate = 0.03
    @Option(help: "The web shop's name (the grants' bundle_id).")
    var shop = "web.studio.game"
    @Option(help: "Seed: the same seed gives the same payments.")
    var seed: UInt64 = 7

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    func run() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let end = calendar.dateInterval(of: .month, for: Date())?.start ?? Date()
        let start = calendar.date(byAdding: .month, value: -months, to: end) ?? end
        let key = "rk_test_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let output = StripeWorldGenerator.generate(
            payments: payments, start: start, end: end, shop: shop, refundRate: refundRate, disputeRate: disputeRate, key: key, seed: seed,
            now: Date())
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        try encoder.encode(output.world).write(to: URL(fileURLWithPath: out + "/stripe-world.json"))
        let keyPath = out + "/stripe.key"
        guard FileManager.default.createFile(atPath: keyPath, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ValidationError("cannot write \(keyPath)")
        }
        try GeneratedFiles.writeLines(output.grants.map { try encoder.encode($0) }, to: out + "/stripe-grants.jsonl")
        print("wrote \(output.world.payments.count) Stripe payments, \(output.grants.count) grants and a restricted key to \(out)")
    }
}

struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a bearer JWT for an app of a generated world (for curl and load tools).",
        discussion: "Example: curl -H \"Authorization: Bearer $(store-simulator token --apps demo/apps.json)\" ...")

    @Option(help: "apps.json written by `generate`.")
    var apps: String
    @Option(help: "Bundle id (default: the first app).")
    var bundle: String?
    @Option(help: "Lifetime in seconds (Apple allows at most 3600).")
    var lifetime = 3600

    func run() throws {
        let list = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: apps))) as? [[String: Any]] ?? []
        guard let app = list.first(where: { bundle == nil || $0["bundleId"] as? String == bundle }),
            let bundleID = app["bundleId"] as? String, let issuer = app["issuerId"] as? String, let keyID = app["keyId"] as? String,
            let keyFile = app["keyFile"] as? String
        else { throw ValidationError("no such app in \(apps)") }
        let credentials = AppStoreCredentials(issuerID: issuer, keyID: keyID, bundleID: bundleID, key: try SigningKey.load(path: keyFile))
        print(try BearerTokenProvider(credentials: credentials, lifetime: TimeInterval(lifetime)).token())
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the App Store (the default command).")

    @Option(help: "World file (JSONL) to serve.")
    var world: String?
    @Option(help: "Google Play world (JSONL, from generate-google) to serve beside the App Store.")
    var googleWorld: String?
    @Option(help: "Stripe world (JSON, from generate-stripe) to serve beside the App Store.")
    var stripeWorld: String?
    @Option(help: "Instead of --world, generate this many purchases in memory (see the generator options).")
    var generate: Int?
    @OptionGroup var generator: GeneratorOptions
    @Option(help: "Directory that keeps the signing chain across restarts (and holds root.pem / root.der).")
    var state: String?
    @Option(help: "Write the root certificate (PEM) here.")
    var rootOut: String?
    @Option var host = "127.0.0.1"
    @Option(help: "Port; 0 picks a free one (printed as LISTENING <port>).")
    var port = 0
    @Option(help: "Event loop threads (0: one per core).")
    var threads = 0
    @Flag(help: "Do not enforce Apple's rate limits.")
    var noRateLimit = false
    @Option(help: "Override a production rate, e.g. transactionInfo=100 (repeatable).")
    var rate: [String] = []
    @Option(help: "Fault plan (JSON file, same fields as PUT /simulator/faults).")
    var faults: String?
    @Option(help: "Added latency per answer (ms).") var latencyMs = 0
    @Option(help: "Added latency per Stripe answer (ms), as Stripe's API answers across the Internet.") var stripeLatencyMs = 0
    @Option(help: "Latency jitter, +/- ms.") var jitterMs = 0
    @Option(help: "Share answered 500 with 5000000.") var internalErrorShare = 0.0
    @Option(help: "Share answered 500 with 5000001.") var retryableErrorShare = 0.0
    @Option(help: "Share whose connection is reset.") var resetShare = 0.0
    @Option(help: "Share whose body is cut.") var truncatedShare = 0.0
    @Option(help: "Share answered with malformed JSON.") var malformedShare = 0.0
    @Option(help: "Share answered with hostile signed data.") var hostileShare = 0.0
    @Option(
        help:
            "Kind of hostile signed data (tampered, wrongRoot, algNone, hs256, shortChain, longChain, noLeafOID, noIntermediateOID, swappedOIDs, expiredLeaf, otherBundle, otherEnvironment)."
    )
    var hostileKind = "tampered"
    @Option(help: "Share answered only after --stall-seconds.") var stallShare = 0.0
    @Option var stallSeconds = 30.0
    @Option(help: "Answer 401 for this bundle (repeatable).") var unauthorizedBundle: [String] = []
    @Option(help: "Fault seed.") var faultSeed: UInt64 = 1
    @Option(help: "Seed of Apple's simulated refund decisions.") var decisionSeed: UInt64 = 0
    @Option(
        help: "Rehearsals: decide a refund request this many seconds after its answer arrives, instead of 13 hours after the request.")
    var decisionDelayAfterAnswer: Double?

    func run() async throws {
        var lines: [WorldLine] = []
        let loading = ContinuousClock.now
        if let world { lines = try WorldFile.load(path: world) }
        if let generate {
            let output = WorldGenerator.generate(generator.options(purchases: generate))
            lines += output.apps.map { .app($0.record) } + output.transactions.map { .transaction($0) }
        }
        let chain = try state.map(SimulatorState.chain(in:)) ?? SigningChain()
        if let rootOut { try chain.rootPEM().write(toFile: rootOut, atomically: true, encoding: .utf8) }
        var rates: [String: Double]? = noRateLimit ? nil : SimulatorConfiguration.appleRates
        for item in rate {
            let parts = item.split(separator: "=")
            guard parts.count == 2, let value = Double(parts[1]) else { throw ValidationError("--rate takes endpoint=requestsPerSecond") }
            rates?[String(parts[0])] = value
        }
        let simulator = Simulator(
            world: World(lines: lines), chain: chain, faults: try faultPlan(),
            configuration: .init(rateLimits: rates, decisionSeed: decisionSeed, decisionDelayAfterAnswer: decisionDelayAfterAnswer),
            google: try googleWorld.map { try GooglePlayWorld.parse(Data(contentsOf: URL(fileURLWithPath: $0))) },
            stripe: try stripeWorld.map { try GenerateStripe.decoder.decode(StripeWorld.self, from: Data(contentsOf: URL(fileURLWithPath: $0))) })
        // Google's notifications of the world's recent events wait in the Pub/Sub subscription, as they would.
        simulator.google?.publishWorldNotifications()
        if stripeLatencyMs > 0 { simulator.stripe?.setFaults(StripeFaults(latencyMilliseconds: stripeLatencyMs)) }
        let loaded = ContinuousClock.now - loading
        FileHandle.standardError.write(
            Data(
                "store-simulator: \(simulator.world.transactions.count) transactions of \(simulator.world.apps.count) apps ready in \(loaded)\n"
                    .utf8))
        let server = try await SimulatorServer.start(simulator: simulator, host: host, port: port, threads: threads)
        // One line a parent script can wait for; written unbuffered.
        FileHandle.standardOutput.write(Data("LISTENING \(server.port)\n".utf8))
        try await server.wait()
    }

    func faultPlan() throws -> FaultPlan {
        if let faults { return try JSONDecoder().decode(FaultPlan.self, from: Data(contentsOf: URL(fileURLWithPath: faults))) }
        var plan = FaultPlan()
        plan.latencyMilliseconds = latencyMs
        plan.jitterMilliseconds = jitterMs
        plan.internalErrorShare = internalErrorShare
        plan.retryableErrorShare = retryableErrorShare
        plan.resetShare = resetShare
        plan.truncatedShare = truncatedShare
        plan.malformedShare = malformedShare
        plan.hostileShare = hostileShare
        plan.hostileKind = hostileKind
        plan.stallShare = stallShare
        plan.stallSeconds = stallSeconds
        plan.unauthorizedBundles = unauthorizedBundle
        plan.seed = faultSeed
        return plan
    }
}
