import AppStoreSimulator
import Foundation
import GooglePlay
import HTTP
import Logging
import TestSupport
import Testing
import _CryptoExtras

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// `google` and `google_apps` in the configuration, and what `config check` proves about each app.
@Suite("Google Play in the configuration and config check")
struct GooglePlayConfigurationTests {
    @Test("google.timeout_seconds: kept to the millisecond within 1 to 45 s; 0.5 (once 1 ms) and 46 (past the deadline's margin) refused by name")
    func timeoutBounds() throws {
        func parse(_ value: String) throws -> ClawbackConfiguration {
            try ClawbackConfiguration.parseWithStores(yaml: "google: {timeout_seconds: \(value)}", baseDirectory: "/etc/clawback")
        }
        #expect(try parse("1.5").google.timeout == .milliseconds(1_500))
        #expect(try parse("45").google.timeout == .seconds(45))
        for refused in ["0.5", "46", "0"] {
            do {
                _ = try parse(refused)
                Issue.record("timeout_seconds \(refused) accepted")
            } catch {
                #expect("\(error)".contains("google.timeout_seconds") && "\(error)".contains("from 1 to 45 seconds"), "\(error)")
            }
        }
    }

    @Test("google_apps parse with paths relative to the file; every problem is named, a key's text never taken")
    func parsing() throws {
        let configuration = try ClawbackConfiguration.parseWithStores(
            yaml: """
                google:
                  api_url: http://127.0.0.1:9000
                  token_url: http://127.0.0.1:9000/google/token
                google_apps:
                  - package_name: com.studio.game
                    service_account_key_file: keys/google.json
                """, baseDirectory: "/etc/clawback")
        #expect(configuration.googleApps == [.init(packageName: "com.studio.game", serviceAccountKeyFile: "/etc/clawback/keys/google.json")])
        #expect(configuration.google.apiURL == "http://127.0.0.1:9000")
        #expect(configuration.google.tokenURL == "http://127.0.0.1:9000/google/token")
        do {
            _ = try ClawbackConfiguration.parseWithStores(
                yaml: """
                    google: {timeout_seconds: 0, bogus: 1}
                    google_apps:
                      - package_name: com.a
                        private_key: "-----BEGIN PRIVATE KEY-----"
                      - service_account_key_file: k.json
                      - package_name: com.a
                        service_account_key_file: k.json
                    """)
            Issue.record("a broken configuration parsed")
        } catch {
            let fields = Set(error.errors.map(\.field))
            for field in [
                "google.timeout_seconds", "google.bogus", "google_apps[0].private_key", "google_apps[0].service_account_key_file",
                "google_apps[1].package_name", "google_apps[2].package_name",
            ] {
                #expect(fields.contains(field), "\(field) not named in \(error.errors)")
            }
            #expect(!error.description.contains("BEGIN PRIVATE KEY"))
        }
        var remote = ClawbackConfiguration()
        remote.google.apiURL = "http://play.example.com"
        #expect(throws: ConfigurationErrors.self) { try remote.validateFinal() }
    }

    @Test("config check: the key's mode, a token, the feed read; an open key, a forged key, an app not granted, each a named failure")
    func check() async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let forged = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let account = "clawback@studio.iam.gserviceaccount.com"
        let world = GooglePlayWorld(packages: [
            GooglePackageRecord(packageName: "com.studio.game", serviceAccounts: [account: key.publicKey.pemRepresentation]),
            GooglePackageRecord(packageName: "com.studio.other", serviceAccounts: [:]),
        ])
        let simulator = Simulator(world: World(apps: [], transactions: []), chain: try SigningChain(), google: world)
        let server = try await SimulatorServer.start(simulator: simulator, threads: 2)
        let http = try HTTPClient(configuration: .init(timeout: .seconds(10), protocolPreference: .http1))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-google-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        @Sendable func stop(_: Void) async {
            http.shutdown()
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        try await scoped((), stop: stop) { _ in
            let base = "http://127.0.0.1:\(server.port)"
            func keyFile(_ name: String, _ key: _RSA.Signing.PrivateKey, mode: Int) throws -> String {
                let path = directory.appendingPathComponent(name).path
                // token_uri Google's own: the configuration sends token requests to the simulator.
                let json = ServiceAccountKey.json(
                    clientEmail: account, privateKeyPEM: key.pkcs8PEMRepresentation, privateKeyID: "k", tokenURI: AccessTokenProvider.audience)
                #expect(FileManager.default.createFile(atPath: path, contents: json, attributes: [.posixPermissions: mode]))
                return path
            }
            var configuration = ClawbackConfiguration()
            configuration.google.apiURL = base
            configuration.google.tokenURL = base + GooglePlaySimulator.tokenPath
            configuration.googleApps = [
                .init(packageName: "com.studio.game", serviceAccountKeyFile: try keyFile("good.json", key, mode: 0o600)),
                .init(packageName: "com.studio.game", serviceAccountKeyFile: try keyFile("open.json", key, mode: 0o644)),
                .init(packageName: "com.studio.game", serviceAccountKeyFile: try keyFile("forged.json", forged, mode: 0o600)),
                .init(packageName: "com.studio.other", serviceAccountKeyFile: try keyFile("other.json", key, mode: 0o640)),
            ]
            let lines = await GooglePlayConfigurationCheck.apps(configuration, http: http)
            func line(_ item: String) -> ConfigurationCheck.Line? { lines.first { $0.item == item } }
            #expect(line("google_apps[0] com.studio.game")?.status == .ok)
            #expect(line("google_apps[0] com.studio.game")?.detail.contains("voided purchases readable") == true)
            #expect(line("google_apps[0] com.studio.game")?.detail.contains("orders readable") == true)
            #expect(line("google_apps[0].service_account_key_file")?.detail.contains("mode 600") == true)
            #expect(line("google_apps[1].service_account_key_file")?.status == .failed)
            #expect(line("google_apps[1].service_account_key_file")?.detail.contains("mode 644") == true)
            #expect(line("google_apps[2] com.studio.game")?.status == .failed)
            #expect(line("google_apps[2] com.studio.game")?.detail.contains("invalid_grant") == true)
            #expect(line("google_apps[3] com.studio.other")?.status == .failed)
            #expect(line("google_apps[3] com.studio.other")?.detail.contains("View financial data") == true)
            #expect(!lines.contains { $0.detail.contains("BEGIN PRIVATE KEY") })
        }
    }
}
