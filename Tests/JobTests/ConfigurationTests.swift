import Foundation
import Job
import Reconciliation
import Storage
import Testing

@Suite("Configuration file")
struct ConfigurationTests {
    @Test("the example configuration parses, with paths and values as written")
    func example() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Jobs/clawback.example.yaml").path
        let configuration = try ClawbackConfiguration.load(path: path)
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
            _ = try ClawbackConfiguration.parse(yaml: yaml)
            Issue.record("a broken configuration was accepted")
        } catch {
            let fields = Set(error.errors.map(\.field))
            for field in ["databse", "apple.concurrency", "apple.rate_limits.transaction_info", "apple.rate_limits.bogus",
                "apps[0].issuer_id", "apps[0].key_file", "apps[0].private_key", "apps[1].bundle_id", "apps[1].environment",
                "run.rounding", "run.batch_size"] {
                #expect(fields.contains(field), "\(field) not reported; got \(fields.sorted())")
            }
            #expect(error.description.contains("secrets are never written in the configuration"))
        }
    }

    @Test("relative paths are relative to the file; the environment overrides the file")
    func pathsAndEnvironment() throws {
        var configuration = try ClawbackConfiguration.parse(
            yaml: "database: {url: 'dbname=a'}\napps:\n  - {bundle_id: b, issuer_id: i, key_id: k, key_file: keys/k.p8}\n",
            baseDirectory: "/etc/clawback")
        #expect(configuration.apps.first?.keyFile == "/etc/clawback/keys/k.p8")
        configuration.applyEnvironment(["CLAWBACK_DATABASE_URL": "dbname=b", "CLAWBACK_REPORT_DIR": "/tmp/r"])
        #expect(configuration.database.url == "dbname=b")
        #expect(configuration.reports.directory == "/tmp/r")
        #expect(throws: ConfigurationErrors.self) { try ClawbackConfiguration.parse(yaml: "- just\n- a list\n") }
        #expect(throws: ConfigurationErrors.self) { try ClawbackConfiguration.parse(yaml: "a: [unclosed\n") }
    }

    @Test("tail window: defaults follow the reconciliation window; a retention shorter than it or than the acceptance window is refused")
    func tailWindow() throws {
        let defaults = try ClawbackConfiguration.parse(yaml: "")
        #expect(defaults.tailWindowSettings == TailWindowSettings(acceptanceWindowDays: 30, futureSkewSeconds: 300, grantRetentionMonths: 4))
        #expect(defaults.tailWindow.recordRetentionYears == 7)
        #expect(defaults.tailWindow.pruneAfterRun)
        let sixMonths = try ClawbackConfiguration.parse(yaml: "run: {window_months: 6}\n")
        #expect(sixMonths.tailWindowSettings.grantRetentionMonths == 7)

        func problems(_ yaml: String) -> [String: String] {
            do {
                _ = try ClawbackConfiguration.parse(yaml: yaml)
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
        for field in ["tail_window.acceptance_window_days", "tail_window.record_retention_years", "tail_window.prune_after_run", "tail_window.retention"] {
            #expect(bad[field] != nil, "\(field) not reported: \(bad)")
        }
        #expect(problems("tail_window: {grant_retention_months: 12, acceptance_window_days: 60}\n").isEmpty)
    }
}
