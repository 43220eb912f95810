import Foundation
import Job
import Reconciliation
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
}
