import AppStoreDriver
import Crypto
import Foundation
import GooglePlayDriver
import HTTP
import Job
import Logging
import Reconciliation
import Storage
import Testing

@Suite("Configuration file")
struct ConfigurationTests {
    @Test("the example configuration parses, with paths and values as written")
    func example() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Jobs/clawback.example.yaml").path
        let configuration = try ClawbackConfiguration.loadWithStores(path: path)
        #expect(configuration.apps.count == 1)
        #expect(configuration.apps.first?.keyFile == "/etc/clawback/AuthKey_2X9R4HXF34.p8")
        #expect(configuration.apps.first?.appAppleID == 6_450_000_001)
        #expect(configuration.run.rounding == .nearestHalfUp)
        #expect(configuration.apple.concurrency == 32)
        #expect(configuration.reports.directory == "/var/lib/clawback/reports")
        #expect(configuration.tailWindow.grantRetentionMonths == 4 && configuration.tailWindow.recordRetentionYears == 7)
    }

    @Test("every problem is reported at once, each naming its field")
    func problems() {
        let yaml = """
            databse: {url: x}
            apple:
              concurrency: 0
              rate_limits: {transaction_info: -1, bogus: 3}
            apps:
              - bundle_id: com.a
                key_id: K
                private_key: "-----BEGIN PRIVATE KEY-----"
              - bundle_id: com.a
                issuer_id: i
                key_id: K
                key_file: k.p8
                environment: Staging
            run:
              rounding: sideways
              batch_size: many
            """
        do {
            _ = try ClawbackConfiguration.parseWithStores(yaml: yaml)
            Issue.record("a broken configuration was accepted")
        } catch {
            let fields = Set(error.errors.map(\.field))
            for field in [
                "databse", "apple.concurrency", "apple.rate_limits.transaction_info", "apple.rate_limits.bogus",
                "apps[0].issuer_id", "apps[0].key_file", "apps[0].private_key", "apps[1].bundle_id", "apps[1].environment",
                "run.rounding", "run.batch_size",
            ] {
                #expect(fields.contains(field), "\(field) not reported; got \(fields.sorted())")
            }
            #expect(error.description.contains("secrets are never written in the configuration"))
        }
    }

    @Test("relative paths are relative to the file; the environment overrides the file")
    func pathsAndEnvironment() throws {
        var configuration = try ClawbackConfiguration.parseWithStores(
            yaml: "database: {url: 'dbname=a'}\napps:\n  - {bundle_id: b, issuer_id: i, key_id: k, key_file: keys/k.p8}\n",
            baseDirectory: "/etc/clawback")
        #expect(configuration.apps.first?.keyFile == "/etc/clawback/keys/k.p8")
        configuration.applyEnvironment(["CLAWBACK_DATABASE_URL": "dbname=b", "CLAWBACK_REPORT_DIR": "/tmp/r"])
        #expect(configuration.database.url == "dbname=b")
        #expect(configuration.reports.directory == "/tmp/r")
        #expect(throws: ConfigurationErrors.self) { try ClawbackConfiguration.parseWithStores(yaml: "- just\n- a list\n") }
        #expect(throws: ConfigurationErrors.self) { try ClawbackConfiguration.parseWithStores(yaml: "a: [unclosed\n") }
    }

    @Test("database.password_file: its first line, relative to the file; refused when others may read it, when empty or missing, never echoed")
    func passwordFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-password-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func load(_ contents: String, mode: Int) throws(ConfigurationErrors) -> String? {
            let file = directory.appendingPathComponent("password")
            try? FileManager.default.removeItem(at: file)
            #expect(FileManager.default.createFile(atPath: file.path, contents: Data(contents.utf8), attributes: [.posixPermissions: mode]))
            var configuration = try ClawbackConfiguration.parseWithStores(
                yaml: "database: {password_file: password}\n", baseDirectory: directory.path)
            try configuration.database.loadPassword()
            return configuration.database.password
        }
        #expect(try load("s3cret-pw\n", mode: 0o600) == "s3cret-pw")
        #expect(try load("s3cret-pw\r\nignored\n", mode: 0o440) == "s3cret-pw", "a Kubernetes Secret's mode under fsGroup")
        for (contents, mode, problem) in [("s3cret-pw", 0o644, "has mode 644"), ("s3cret-pw", 0o660, "has mode 660"), ("\n", 0o600, "is empty")] {
            do {
                _ = try load(contents, mode: mode)
                Issue.record("accepted \(problem)")
            } catch {
                #expect(error.errors.map(\.field) == ["database.password_file"])
                #expect(error.description.contains(problem), "\(error)")
                #expect(!error.description.contains("s3cret"))
            }
        }
        var missing = try ClawbackConfiguration.parseWithStores(yaml: "database: {password_file: /nonexistent/password}\n")
        #expect(throws: ConfigurationErrors.self) { try missing.database.loadPassword() }
    }

    @Test("reports.delivery.s3: parsed with paths relative to the file; every missing or bad field named at once")
    func reportDelivery() throws {
        let configuration = try ClawbackConfiguration.parseWithStores(
            yaml: """
                reports:
                  delivery:
                    s3: {endpoint: 'https://s3.eu-west-1.amazonaws.com', region: eu-west-1, bucket: finance, prefix: clawback/, credentials_file: s3.txt, url_style: virtual_hosted}
                """, baseDirectory: "/etc/clawback")
        #expect(
            configuration.reports.s3
                == .init(
                    endpoint: "https://s3.eu-west-1.amazonaws.com", region: "eu-west-1", bucket: "finance", prefix: "clawback/",
                    credentialsFile: "/etc/clawback/s3.txt", virtualHostedStyle: true))
        do {
            _ = try ClawbackConfiguration.parseWithStores(
                yaml: "reports:\n  delivery:\n    s3: {endpoint: 'http://minio.internal:9000', bucket: 'a/b', prefix: /x, url_style: dns, extra: 1}\n"
            )
            Issue.record("a bad delivery section was accepted")
        } catch {
            let fields = Set(error.errors.map(\.field))
            #expect(
                fields == [
                    "reports.delivery.s3.region", "reports.delivery.s3.credentials_file", "reports.delivery.s3.endpoint",
                    "reports.delivery.s3.bucket", "reports.delivery.s3.prefix", "reports.delivery.s3.url_style", "reports.delivery.s3.extra",
                ], "\(error)")
        }
    }

    @Test("a password in the file's database URL is refused without being echoed; Apple's endpoints need TLS off this machine")
    func secretsAndTransport() throws {
        for url in ["postgresql://clawback:hunter2pw@db/clawback", "host=db password=hunter2pw", "postgresql://db/clawback?password=hunter2pw"] {
            do {
                _ = try ClawbackConfiguration.parseWithStores(yaml: "database: {url: '\(url)'}\n")
                Issue.record("accepted a password in the file: \(url)")
            } catch {
                #expect(error.errors.map(\.field) == ["database.url"])
                #expect(!error.description.contains("hunter2pw"))
            }
        }
        var configuration = try ClawbackConfiguration.parseWithStores(
            yaml: "apple: {production_url: 'http://127.0.0.1:8080', sandbox_url: 'http://localhost:8080/sandbox'}\n")
        try configuration.validateFinal()
        configuration.applyEnvironment(["CLAWBACK_APPLE_PRODUCTION_URL": "http://api.storekit.example.com"])
        do {
            try configuration.validateFinal()
            Issue.record("plain http to another host was accepted")
        } catch {
            #expect(error.errors.map(\.field) == ["apple.production_url"])
            #expect(error.description.contains("clear text"))
        }
    }

    @Test("tail window: defaults follow the reconciliation window; a retention shorter than it or than the acceptance window is refused")
    func tailWindow() throws {
        let defaults = try ClawbackConfiguration.parseWithStores(yaml: "")
        #expect(defaults.tailWindowSettings == TailWindowSettings(acceptanceWindowDays: 30, futureSkewSeconds: 300, grantRetentionMonths: 4))
        #expect(defaults.tailWindow.recordRetentionYears == 7)
        #expect(defaults.tailWindow.pruneAfterRun)
        let sixMonths = try ClawbackConfiguration.parseWithStores(yaml: "run: {window_months: 6}\n")
        #expect(sixMonths.tailWindowSettings.grantRetentionMonths == 7)

        func problems(_ yaml: String) -> [String: String] {
            do {
                _ = try ClawbackConfiguration.parseWithStores(yaml: yaml)
                return [:]
            } catch {
                return Dictionary(error.errors.map { ($0.field, $0.problem) }, uniquingKeysWith: { $1 })
            }
        }
        let short = problems("tail_window: {grant_retention_months: 3}\n")
        #expect(short["tail_window.grant_retention_months"]?.contains("shorter than the reconciliation window") == true)
        let shortForSix = problems("run: {window_months: 6}\ntail_window: {grant_retention_months: 6}\n")
        #expect(shortForSix["tail_window.grant_retention_months"]?.contains("run.window_months + 1 = 7") == true)
        let acceptance = problems("tail_window: {acceptance_window_days: 200, grant_retention_months: 5}\n")
        #expect(acceptance["tail_window.acceptance_window_days"]?.contains("longer than the grant retention of 5 months") == true)
        let bad = problems("tail_window: {acceptance_window_days: 0, record_retention_years: 0, prune_after_run: maybe, retention: 4}\n")
        for field in [
            "tail_window.acceptance_window_days", "tail_window.record_retention_years", "tail_window.prune_after_run", "tail_window.retention",
        ] {
            #expect(bad[field] != nil, "\(field) not reported: \(bad)")
        }
        #expect(problems("tail_window: {grant_retention_months: 12, acceptance_window_days: 60}\n").isEmpty)
    }
}

@Suite("Each store's sections, read by its driver")
struct StoreSectionsTests {
    static func problems(_ yaml: String) -> [String: String] {
        do {
            var configuration = try ClawbackConfiguration.parseWithStores(yaml: yaml)
            configuration.applyEnvironment([:])
            try configuration.validateFinal()
            return [:]
        } catch {
            return Dictionary(error.errors.map { ($0.field, $0.problem) }, uniquingKeysWith: { $1 })
        }
    }

    @Test("every store's endpoints carry its credentials over TLS only, off this machine")
    func transport() {
        let found = Self.problems(
            """
            stripe: {api_key_file: k, api_url: "http://stripe.example.com", shops: [{name: shop}]}
            google: {notifications: {subscription: projects/p/subscriptions/s, pubsub_url: "http://pubsub.example.com"}}
            """)
        #expect(found["stripe.api_url"]?.contains("clear text") == true, "\(found)")
        #expect(found["google.notifications.pubsub_url"]?.contains("clear text") == true, "\(found)")
        #expect(Self.problems("stripe: {api_key_file: k, api_url: \"http://127.0.0.1:9\", shops: [{name: shop}]}\n").isEmpty)
    }

    @Test("the App Store's timeout and its refund-request feed's keys are its driver's, bounds and all; empty file paths are refused")
    func appStoreKeys() throws {
        #expect(Self.problems("apple: {timeout_seconds: 0}\n")["apple.timeout_seconds"]?.contains("from 1 to 120") == true)
        #expect(Self.problems("apple: {timeout_seconds: 1e300}\n")["apple.timeout_seconds"] != nil)
        #expect(Self.problems("refund_requests: {lookback_hours: 0}\n")["refund_requests.lookback_hours"] != nil)
        let configuration = try ClawbackConfiguration.parseWithStores(
            yaml: "refund_requests: {lookback_hours: 48, overlap_minutes: 60, undelivered_after_hours: 2, decline_at_consumed_percent: 70}\n")
        #expect(configuration.refundRequestFeed.lookbackHours == 48 && configuration.refundRequestFeed.overlapMinutes == 60)
        #expect(configuration.refundRequestFeed.undeliveredAfterHours == 2 && configuration.refundRequests.declineAtConsumedPercent == 70)
        let empty = Self.problems(
            """
            apps: [{bundle_id: b, issuer_id: i, key_id: k, key_file: f, shared_secret_file: ""}]
            google_apps: [{package_name: p, service_account_key_file: ""}]
            """)
        #expect(empty["apps[0].shared_secret_file"] != nil && empty["google_apps[0].service_account_key_file"] == "is required", "\(empty)")
    }

    @Test("a store's driver registered again keeps its place")
    func registeredAgain() {
        BuiltInDrivers.registered
        let before = StoreDrivers.all.map(\.storeDescription.store)
        StoreDrivers.register(AppStoreDriver())
        #expect(StoreDrivers.all.map(\.storeDescription.store) == before)
    }
}

@Suite("Credentials mounted as Kubernetes secrets")
struct MountedSecretTests {
    @Test("key and shared secret files reached through symbolic links are judged by the files' own modes")
    func symlinkedSecrets() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-secret-\(UUID())")
        let data = directory.appendingPathComponent("..2026_11_23_06_00_00.000000001")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try P256.Signing.PrivateKey().pemRepresentation.write(to: data.appendingPathComponent("AuthKey.p8"), atomically: true, encoding: .utf8)
        try "shared-secret-value\n".write(to: data.appendingPathComponent("shared_secret"), atomically: true, encoding: .utf8)
        for name in ["AuthKey.p8", "shared_secret"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: data.appendingPathComponent(name).path)
            try FileManager.default.createSymbolicLink(
                atPath: directory.appendingPathComponent(name).path,
                withDestinationPath: data.lastPathComponent + "/" + name)
        }
        var configuration = try ClawbackConfiguration.parseWithStores(
            yaml: """
                apps:
                  - {bundle_id: com.studio.game, issuer_id: i, key_id: K, key_file: AuthKey.p8, shared_secret_file: shared_secret}
                """, baseDirectory: directory.path)
        configuration.apple.concurrency = 1
        let http = try HTTPClient(configuration: .init())
        defer { http.shutdown() }
        let apps = try AppleAppsFactory.make(configuration, shardCount: 1, http: http, logger: Logger(label: "test"))
        #expect(apps.sharedSecrets["com.studio.game"] == "shared-secret-value")
        #expect(apps.clients["com.studio.game"] != nil)
        // The files' own modes still count: an open one is refused through the link too.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: data.appendingPathComponent("shared_secret").path)
        #expect(throws: ConfigurationErrors.self) {
            try AppleAppsFactory.make(configuration, shardCount: 1, http: http, logger: Logger(label: "test"))
        }
    }
}
