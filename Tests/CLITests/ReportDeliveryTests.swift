import Foundation
import HTTP
import TestSupport
import Testing

/// Finance gets the reports without a shell on the job's machine: the run puts them in an S3-compatible
/// bucket (moto's server, which checks every request's signature), exactly the bytes it wrote, and a
/// delivery that fails leaves them on disk, says so and exits 73.
@Suite("reports delivered to an S3-compatible bucket", .serialized)
struct ReportDeliveryTests {
    /// The setup's configuration with a delivery section for `server`.
    static func configuration(_ setup: RunCrashTests.Setup, endpoint: String, credentials: String, name: String) throws -> String {
        let text = try String(contentsOfFile: setup.configPath, encoding: .utf8)
        let delivery = """
            reports:
              directory: reports
              delivery:
                s3: {endpoint: '\(endpoint)', region: us-east-1, bucket: finance-reports, prefix: clawback/monthly/, credentials_file: \(credentials)}

            """
        let path = setup.directory.appendingPathComponent(name).path
        try text.replacingOccurrences(of: "reports:\n  directory: reports\n", with: delivery).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(
        "a run delivers every report byte for byte; a key the bucket refuses: exit 73, the run done, files on disk, report delivers them; an unreachable bucket: 73 after retries; credentials others may read: 78 before any work"
    )
    func delivery() async throws {
        try await RunCrashTests.Setup.with(purchases: 120, seed: 61) { setup in
            let server = try S3TestServer.start()
            defer { server.stop() }
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let url = try TestPostgres.connectionString(database: database)
                let good = setup.directory.appendingPathComponent("s3-good").path
                try server.writeCredentials(to: good)
                let wrong = setup.directory.appendingPathComponent("s3-wrong").path
                try server.writeCredentials(to: wrong, secret: "not-the-secret")

                // A refused key: the run is done and its reports are on disk; exit 73 says what was not delivered.
                let refusedConfig = try Self.configuration(setup, endpoint: server.endpoint, credentials: wrong, name: "refused.yaml")
                let refused = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--json"], environment: ["CLAWBACK_CONFIG": refusedConfig, "CLAWBACK_DATABASE_URL": url])
                #expect(refused.status == 73, "\(refused.standardError)")
                #expect(refused.standardError.contains("could not be delivered to s3://finance-reports/clawback/monthly/"))
                #expect(refused.standardError.contains("SignatureDoesNotMatch"), "\(refused.standardError)")
                #expect(!refused.standardError.contains("not-the-secret"))
                let summary = try #require(try JSONSerialization.jsonObject(with: Data(refused.standardOutput.utf8)) as? [String: Any])
                #expect(summary["status"] as? String == "succeeded")
                let files = try #require(summary["reports"] as? [String])
                #expect(files.count >= 3 && files.allSatisfy { FileManager.default.fileExists(atPath: $0) })
                for file in files {
                    let key = "clawback/monthly/" + URL(fileURLWithPath: file).lastPathComponent
                    #expect(try await server.object(key: key).status == 404, "nothing was stored with a refused key")
                }

                // `clawback report --run` with the right key delivers them, byte for byte.
                let goodConfig = try Self.configuration(setup, endpoint: server.endpoint, credentials: good, name: "good.yaml")
                let runID = try #require(summary["run_id"] as? Int)
                let report = try await CommandRunner.run(
                    "clawback", ["report", "--run", String(runID)], environment: ["CLAWBACK_CONFIG": goodConfig, "CLAWBACK_DATABASE_URL": url])
                #expect(report.status == 0, "\(report.standardError)")
                #expect(report.standardOutput.contains("delivered to s3://finance-reports/clawback/monthly/"))

                // A run delivers its own reports too: every file, exactly the bytes on disk.
                let run = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--json"], environment: ["CLAWBACK_CONFIG": goodConfig, "CLAWBACK_DATABASE_URL": url])
                #expect(run.status == 0, "\(run.standardError)")
                let delivered = try #require(
                    (try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any])?["reports"] as? [String])
                #expect(delivered.count == files.count)
                for file in delivered + files {
                    let stored = try await server.object(key: "clawback/monthly/" + URL(fileURLWithPath: file).lastPathComponent)
                    #expect(stored.status == 200, "\(file)")
                    #expect(stored.body == [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))), "\(file) stored as written")
                }

                // Nothing listening: retried, then 73 naming the bucket; the reports stay on disk.
                let port = try SilentListener.closedPort()
                let downConfig = try Self.configuration(setup, endpoint: "http://127.0.0.1:\(port)", credentials: good, name: "down.yaml")
                let down = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--json"], environment: ["CLAWBACK_CONFIG": downConfig, "CLAWBACK_DATABASE_URL": url])
                #expect(down.status == 73, "\(down.standardError)")
                #expect(down.standardError.contains("report delivery failed; trying again"), "retried: \(down.standardError)")
                #expect(down.standardError.contains("not attempted"), "the rest not hammered: \(down.standardError)")

                // Credentials others may read are refused before any work, naming the field.
                try server.writeCredentials(to: good, mode: 0o644)
                let exposed = try await CommandRunner.run(
                    "clawback", setup.arguments, environment: ["CLAWBACK_CONFIG": goodConfig, "CLAWBACK_DATABASE_URL": url])
                #expect(exposed.status == 78)
                #expect(exposed.standardError.contains("reports.delivery.s3.credentials_file"), "\(exposed.standardError)")
            }
        }
    }
}
