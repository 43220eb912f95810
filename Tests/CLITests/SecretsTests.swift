import AppStoreSimulator
import Foundation
import Postgres
import TestSupport
import Testing

/// Nothing clawback prints or writes may carry a secret: the In-App Purchase keys, the bearer tokens
/// made from them, or the database password. Every command is run at the most verbose log level, on the
/// good path and on the failing ones (wrong key, unreachable database), and everything it printed or
/// wrote is searched.
@Suite("Secrets stay secret")
struct SecretsTests {
    static let password = "pw-Zq7-never-print-me"

    /// Every base64 line of every key file, and the key's bytes in hex: each must appear nowhere.
    static func keyMaterial(in directory: URL) throws -> [String] {
        let keys = directory.appendingPathComponent("keys")
        var material: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: keys.path) where name.hasSuffix(".p8") {
            let pem = try String(contentsOf: keys.appendingPathComponent(name), encoding: .utf8)
            let lines = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
            material += lines.map(String.init).filter { $0.count >= 16 }
            let der = Data(base64Encoded: lines.joined()) ?? Data()
            material.append(der.map { String(format: "%02x", $0) }.joined())
        }
        return material
    }

    @Test("keys, bearer tokens and the database password appear in no output, log, report or metrics file, on good and failing paths")
    func nothingLeaks() async throws {
        try await RunCrashTests.Setup.with(purchases: 200, seed: 61, bundles: ["com.studio.game", "com.studio.other"]) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let secrets = try Self.keyMaterial(in: setup.directory) + [Self.password]
                #expect(secrets.count >= 6)
                var url = URLComponents(string: try TestPostgres.connectionString(database: database))!
                url.password = Self.password  // trust authentication ignores it; it still travels through clawback
                var environment = try setup.environment(database: database)
                environment["CLAWBACK_DATABASE_URL"] = url.string!
                var unreachable = url
                unreachable.port = 1
                let outputs = setup.directory.appendingPathComponent("out")
                let metrics = outputs.appendingPathComponent("clawback.prom").path
                let verbose = ["--log-level", "trace"]
                var printed: [String] = []
                func clawback(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
                    let result = try await CommandRunner.run("clawback", arguments, environment: environment)
                    printed += [result.standardOutput, result.standardError]
                    return result.status
                }
                let window = ["--from", setup.from, "--to", setup.to]
                #expect(try await clawback(["config", "check"] + verbose, environment) == 0)
                #expect(try await clawback(["run"] + window + verbose + ["--report-dir", outputs.path, "--metrics-file", metrics], environment) == 0)
                #expect(try await clawback(["report", "--run", "1", "--report-dir", outputs.path] + verbose, environment) == 0)
                #expect(try await clawback(["runs"] + verbose, environment) == 0)
                #expect(try await clawback(["run"] + window + ["--player", setup.output.grants[0].player_id] + verbose, environment) == 0)

                var failing = environment
                failing["CLAWBACK_DATABASE_URL"] = unreachable.string!
                #expect(try await clawback(["run"] + window + verbose, failing) == 69)
                #expect(try await clawback(["config", "check"] + verbose, failing) == 78)

                var refused = FaultPlan()
                refused.unauthorizedBundles = ["com.studio.other"]
                setup.server.simulator.setFaults(refused)
                #expect(try await clawback(["config", "check"] + verbose, environment) == 78)
                #expect(
                    try await clawback(["run"] + window + ["--bundle", "com.studio.other"] + verbose + ["--report-dir", outputs.path], environment)
                        == 75)
                setup.server.simulator.setFaults(.none)

                var files: [String] = []
                for name in try FileManager.default.contentsOfDirectory(atPath: outputs.path) {
                    files.append(try String(contentsOf: outputs.appendingPathComponent(name), encoding: .utf8))
                }
                #expect(files.count >= 4, "reports and metrics were written")
                #expect(printed.joined().contains("trace") || printed.joined().contains("debug"), "the verbose level printed nothing extra")
                // A compact JWS or JWT (bearer token, or Apple's signed data, which logs have no need of either).
                let token = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/
                for (index, text) in (printed + files).enumerated() {
                    for secret in secrets {
                        #expect(!text.contains(secret), "output \(index) carries a secret: …\(secret.prefix(6))…")
                    }
                    #expect(text.firstMatch(of: token) == nil, "output \(index) carries a token")
                }
            }
        }
    }
}
