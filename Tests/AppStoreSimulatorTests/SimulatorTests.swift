import AppStore
import Crypto
import Foundation
import Testing

@testable import AppStoreSimulator

@Suite("The simulator's own rules")
struct SimulatorTests {
    static let key = P256.Signing.PrivateKey()
    static let app = AppRecord(
        bundleId: "com.studio.game", appAppleId: 1, issuerId: "issuer-1", keys: [.init(keyId: "KEY1", publicKey: key.publicKey.pemRepresentation)],
        sharedSecret: "s3cret")

    static func simulator(_ transactions: [TransactionRecord] = [], faults: FaultPlan = .none) throws -> Simulator {
        Simulator(
            world: World(apps: [app], transactions: transactions), chain: try SigningChain(), faults: faults,
            configuration: .init(rateLimits: nil))
    }

    static func token(
        header: [String: Any] = ["alg": "ES256", "kid": "KEY1", "typ": "JWT"], claims overrides: [String: Any?] = [:],
        key: P256.Signing.PrivateKey = key
    ) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        var claims: [String: Any] = ["iss": "issuer-1", "iat": now, "exp": now + 300, "aud": "appstoreconnect-v1", "bid": "com.studio.game"]
        for (name, value) in overrides { claims[name] = value }
        let input =
            Base64.encodeURL(try JSONSerialization.data(withJSONObject: header)) + "."
            + Base64.encodeURL(try JSONSerialization.data(withJSONObject: claims))
        return input + "." + Base64.encodeURL(try key.signature(for: Array(input.utf8)).rawRepresentation)
    }

    static func get(_ simulator: Simulator, _ path: String, token: String?) -> Int? {
        simulator.handle(SimulatorRequest(method: "GET", path: path, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])).status
    }

    static let purchase = TransactionRecord(transactionId: "2000000001", bundleId: "com.studio.game", productId: "gems", purchaseDate: Date())

    @Test("bearer tokens are checked like Apple: signature, kid, iss, aud, bid, exp, and at most 60 minutes of life")
    func bearerRules() throws {
        let simulator = try Self.simulator([Self.purchase])
        let path = "/inApps/v1/transactions/2000000001"
        let now = Int(Date().timeIntervalSince1970)
        #expect(Self.get(simulator, path, token: try Self.token()) == 200)
        // Apple's Python library sends no iat: accepted.
        #expect(Self.get(simulator, path, token: try Self.token(claims: ["iat": nil])) == 200)
        let refused: [(String, String)] = [
            ("no token", ""), ("other key", try Self.token(key: .init())),
            ("unknown kid", try Self.token(header: ["alg": "ES256", "kid": "NOPE", "typ": "JWT"])),
            ("alg none", try Self.token(header: ["alg": "none", "kid": "KEY1"])),
            ("wrong issuer", try Self.token(claims: ["iss": "issuer-2"])),
            ("wrong audience", try Self.token(claims: ["aud": "appstoreconnect-v2"])),
            ("unknown bundle", try Self.token(claims: ["bid": "com.other"])),
            ("expired", try Self.token(claims: ["iat": now - 600, "exp": now - 10])),
            ("too long-lived", try Self.token(claims: ["exp": now + 3700])),
        ]
        for (name, token) in refused {
            #expect(Self.get(simulator, path, token: token.isEmpty ? nil : token) == 401, "\(name) was accepted")
        }
        let tampered = try Self.token()
        let forged = String(tampered.dropLast(3)) + (tampered.hasSuffix("AAA") ? "BBB" : "AAA")
        #expect(Self.get(simulator, path, token: forged) == 401)
    }

    @Test("errors use Apple's bodies and exactly Content-Type application/json")
    func errorShape() throws {
        let simulator = try Self.simulator()
        let reply = simulator.handle(
            SimulatorRequest(
                method: "GET", path: "/inApps/v1/transactions/2000000999", headers: [("Authorization", "Bearer \(try Self.token())")]))
        guard case .respond(let status, let headers, let body) = reply else {
            Issue.record("no response")
            return
        }
        #expect(status == 404)
        #expect(headers.first { $0.0 == "Content-Type" }?.1 == "application/json")
        #expect(String(decoding: body, as: UTF8.self) == #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#)
    }

    /// A generated world over fixed dates.
    static func worldOptions(purchases: Int, refundRate: Double) -> WorldGenerator.Options {
        var options = WorldGenerator.Options(
            start: Date(timeIntervalSince1970: 1_780_000_000), end: Date(timeIntervalSince1970: 1_790_000_000),
            now: Date(timeIntervalSince1970: 1_791_000_000))
        options.purchases = purchases
        options.refundRate = refundRate
        return options
    }

    @Test("a world file is written whole however its writes are cut: every line back, in order, and nothing left under a temporary name")
    func worldFileInChunks() throws {
        let options = Self.worldOptions(purchases: 500, refundRate: 0.2)
        let world = WorldGenerator.generate(options)
        let lines = world.apps.map { WorldLine.app($0.record) } + world.transactions.map { WorldLine.transaction($0) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-world-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var contents: [Data] = []
        // Chunks of one byte, a prime, and larger than the file: the same bytes each time.
        for chunkSize in [1, 4093, 1 << 24] {
            let path = directory.appendingPathComponent("world-\(chunkSize).jsonl").path
            try WorldFile.write(lines, to: path, chunkSize: chunkSize)
            #expect(try WorldFile.load(path: path) == lines)
            contents.append(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        #expect(Set(contents).count == 1)
        #expect(contents.first?.count ?? 0 > 4093 * 10)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.contains(".partial-") })
    }

    @Test("the same seed gives the same world, keys and grants")
    func generatorDeterminism() {
        var options = Self.worldOptions(purchases: 2000, refundRate: 0.1)
        let first = WorldGenerator.generate(options)
        let second = WorldGenerator.generate(options)
        #expect(first.transactions == second.transactions)
        #expect(first.grants == second.grants)
        #expect(first.apps.map(\.privateKey.rawRepresentation) == second.apps.map(\.privateKey.rawRepresentation))
        options.seed = 43
        #expect(WorldGenerator.generate(options).transactions != first.transactions)
        // The shares hold roughly.
        let refunds = first.transactions.filter { $0.refund != nil }
        #expect((150...250).contains(refunds.count))
        #expect(refunds.contains { $0.refund?.type == "REFUND_PRORATED" })
        #expect(refunds.contains { $0.refund?.reversedDate != nil })
        #expect(first.grants.count == 2000)
        #expect(first.transactions.count < first.grants.count)  // some grants are unknown to Apple
    }

    @Test("the same fault seed and requests give the same faults, whatever happens in between")
    func faultDeterminism() throws {
        var plan = FaultPlan()
        plan.internalErrorShare = 0.3
        plan.resetShare = 0.2
        plan.seed = 7
        let token = try Self.token()
        let transactions = (0..<50).map {
            TransactionRecord(transactionId: String(2_000_000_100 + $0), bundleId: "com.studio.game", productId: "gems", purchaseDate: Date())
        }
        func outcomes(_ order: [Int]) throws -> [Int: [Int]] {
            let simulator = try Self.simulator(transactions, faults: plan)
            var result: [Int: [Int]] = [:]
            for index in order {
                result[index, default: []].append(Self.get(simulator, "/inApps/v1/transactions/\(2_000_000_100 + index)", token: token) ?? -1)
            }
            return result
        }
        let forward = Array(0..<50) + Array(0..<50)
        let shuffled = forward.shuffled()
        #expect(try outcomes(forward) == outcomes(forward))
        // Per request and attempt, the order does not matter.
        #expect(try outcomes(forward).mapValues { $0.sorted() } == outcomes(shuffled).mapValues { $0.sorted() })
        let statuses = try outcomes(forward).values.flatMap { $0 }
        #expect(statuses.contains(500) && statuses.contains(-1) && statuses.contains(200))
    }

    @Test("a state directory keeps the signing chain across restarts, with private keys unreadable by others")
    func statePersistence() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-state-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try SimulatorState.chain(in: directory)
        let second = try SimulatorState.chain(in: directory)
        #expect(try SigningChain.der(first.root) == SigningChain.der(second.root))
        #expect(first.leafKey.rawRepresentation == second.leafKey.rawRepresentation)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/leaf.key.pem")
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o077 } == 0)
        #expect(FileManager.default.fileExists(atPath: directory + "/root.der"))
    }

    @Test("a world file round-trips through JSONL, and a bad line is reported with its number")
    func worldFile() throws {
        let lines: [WorldLine] = [
            .app(Self.app),
            .transaction(
                TransactionRecord(
                    transactionId: "1", bundleId: "com.studio.game", productId: "p", purchaseDate: Date(timeIntervalSince1970: 1_790_000_000.5),
                    refund: RefundRecord(date: Date(timeIntervalSince1970: 1_790_100_000), type: "REFUND_PRORATED", percentage: 50_000))),
        ]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("world-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try WorldFile.write(lines, to: path)
        #expect(try WorldFile.load(path: path) == lines)
        let error = #expect(throws: WorldFile.LineError.self) {
            try WorldFile.parse(Data("# comment\n{\"record\":\"app\"}\n".utf8))
        }
        #expect(error?.line == 2)
    }

    @Test("the byte-level RFC 3339 parser agrees with Foundation's, offsets and fractions included")
    func rfc3339() {
        let foundation = ISO8601DateFormatter()
        foundation.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for text in ["2026-10-03T12:00:00.000Z", "2026-02-28T23:59:59.999+01:00", "1999-12-31T00:00:00.500-05:30", "2024-02-29T12:34:56.250Z"] {
            #expect(RFC3339.parse(text) == foundation.date(from: text), "\(text)")
        }
        #expect(RFC3339.parse("2026-10-03T12:00:00Z") == Date(timeIntervalSince1970: 1_791_028_800))
        for bad in ["2026-10-03", "2026-13-03T12:00:00Z", "2026-10-03T12:00:00", "2026-10-03T12:00:00Zjunk", ""] {
            #expect(RFC3339.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("verifyReceipt: 21007 for a sandbox receipt at production, 21004 for a wrong secret, refunds of non-consumables")
    func verifyReceipt() throws {
        let refunded = TransactionRecord(
            transactionId: "1000000001", bundleId: "com.studio.game", productId: "premium", type: "Non-Consumable",
            purchaseDate: Date(timeIntervalSinceNow: -86_400 * 10), refund: RefundRecord(date: Date(timeIntervalSinceNow: -86_400)))
        let consumable = TransactionRecord(transactionId: "1000000002", bundleId: "com.studio.game", productId: "gems", purchaseDate: Date())
        let sandbox = TransactionRecord(
            transactionId: "1000000003", bundleId: "com.studio.game", productId: "gems", environment: "Sandbox", purchaseDate: Date())
        let simulator = try Self.simulator([refunded, consumable, sandbox])
        func post(_ path: String, receipt: String, password: String? = "s3cret") throws -> [String: Any] {
            var body: [String: Any] = ["receipt-data": receipt]
            if let password { body["password"] = password }
            let reply = simulator.handle(SimulatorRequest(method: "POST", path: path, body: Array(try JSONSerialization.data(withJSONObject: body))))
            guard case .respond(_, _, let bytes) = reply else { return [:] }
            return try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] ?? [:]
        }
        func receipt(_ ids: [String]) -> String {
            Base64.encodeStandard(
                Array("{\n\"purchase-info\" = \"\(Base64.encodeStandard(Array("{\"transaction-id\" = \"\(ids[0])\";}".utf8)))\";\n}".utf8))
        }
        let answer = try post("/verifyReceipt", receipt: receipt(["1000000001"]))
        #expect(answer["status"] as? Int == 0)
        let inApp = (answer["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]] ?? []
        #expect(inApp.first?["cancellation_date_ms"] != nil)
        // A finished consumable is no longer in the receipt: verifyReceipt cannot see its refund.
        let consumableAnswer = try post("/verifyReceipt", receipt: receipt(["1000000002"]))
        #expect(((consumableAnswer["receipt"] as? [String: Any])?["in_app"] as? [Any])?.isEmpty == true)
        #expect(try post("/verifyReceipt", receipt: receipt(["1000000003"]))["status"] as? Int == 21007)
        #expect(try post("/sandbox/verifyReceipt", receipt: receipt(["1000000003"]))["status"] as? Int == 0)
        #expect(try post("/sandbox/verifyReceipt", receipt: receipt(["1000000001"]))["status"] as? Int == 21008)
        #expect(try post("/verifyReceipt", receipt: receipt(["1000000001"]), password: "wrong")["status"] as? Int == 21004)
        #expect(try post("/verifyReceipt", receipt: "garbage")["status"] as? Int == 21002)
    }
}

@Suite("The simulator's answers")
struct SimulatorAnswerTests {
    @Test("a one-field answer is the JSON JSONSerialization would write, whatever the string holds")
    func oneFieldObject() throws {
        for string in ["eyJhbGciOiJFUzI1NiJ9.e30.c2ln", #"quote " backslash \ slash / "#, "line\nbreak\ttab\u{1}bell é ☃"] {
            let bytes = Route.object(field: "signedTransactionInfo", string: string)
            let decoded = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String]
            #expect(decoded == ["signedTransactionInfo": string])
        }
    }
}
