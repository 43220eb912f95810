import AppStoreDriver
import Foundation
import GooglePlayDriver
import Job
import Reconciliation
import Storage
import Testing

@Suite("Prometheus textfile metrics")
struct MetricsFileTests {
    func value(_ name: String, in text: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }.map { String($0.split(separator: " ").last ?? "") }
    }

    @Test("the daily run's series are its own (clawback_daily_…): no series twice beside the monthly file, its success not the monthly run's")
    func daily() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let monthly = directory.appendingPathComponent("clawback.prom").path
        let daily = directory.appendingPathComponent("clawback-daily.prom").path
        let pending = StaffLedger.Pending(entries: 3, oldestAgeSeconds: 60)
        try await MetricsFile.write(
            to: .file(monthly), status: .failed, counters: RunCounters(), runID: 1, window: "2026-09-01..2026-12-01", dryRun: false, pending: pending,
            series: .monthly)
        try await MetricsFile.write(
            to: .file(daily), status: .succeeded, counters: RunCounters(), runID: 2, window: "2026-09-01..2026-12-01", dryRun: false,
            pending: pending, series: .daily, now: Date(timeIntervalSince1970: 1_795_000_000))
        let monthlyText = try String(contentsOfFile: monthly, encoding: .utf8)
        let dailyText = try String(contentsOfFile: daily, encoding: .utf8)
        #expect(value("clawback_daily_last_success_timestamp_seconds", in: dailyText) == "1795000000")
        #expect(value("clawback_last_success_timestamp_seconds", in: monthlyText) == "0")
        func series(_ text: String) -> Set<String> {
            Set(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: " ").first ?? "") })
        }
        #expect(series(monthlyText).isDisjoint(with: series(dailyText)))
        #expect(series(dailyText).allSatisfy { $0.hasPrefix("clawback_daily_") || $0.contains("source=\"daily_run\"") })
        // Every run's requests under the same names; the App Store's 1.x names kept beside them, deprecated.
        #expect(value(#"clawback_requests{window="2026-09-01..2026-12-01"}"#, in: monthlyText) == "0")
        #expect(value(#"clawback_apple_requests{window="2026-09-01..2026-12-01"}"#, in: monthlyText) == "0")
        #expect(value(#"clawback_daily_rate_limited{window="2026-09-01..2026-12-01"}"#, in: dailyText) == "0")
        #expect(monthlyText.contains("# HELP clawback_apple_requests Deprecated"))

        // Google Play's monthly run: series of its own beside both, its requests named Google's.
        let google = directory.appendingPathComponent("clawback-google.prom").path
        var counters = RunCounters()
        counters.storeRequests = 12
        try await MetricsFile.write(
            to: .file(google), status: .succeeded, counters: counters, runID: 3, window: "2026-09-01..2026-12-01", dryRun: false,
            pending: pending, series: .googlePlay, now: Date(timeIntervalSince1970: 1_795_000_100))
        let googleText = try String(contentsOfFile: google, encoding: .utf8)
        #expect(value("clawback_google_last_success_timestamp_seconds", in: googleText) == "1795000100")
        #expect(googleText.contains(#"clawback_google_requests{window="2026-09-01..2026-12-01"} 12"#))
        #expect(!googleText.contains("apple_r"), "no Apple-named request series in Google's file")
        #expect(series(googleText).isDisjoint(with: series(monthlyText).union(series(dailyText))))
        #expect(series(googleText).allSatisfy { $0.hasPrefix("clawback_google_") || $0.contains("source=\"google_run\"") })

        // How fast refunds came back, with the run's store.
        let speedy = directory.appendingPathComponent("speed.prom").path
        let speed = RecoverySpeed(
            store: .googlePlay, refunds: 40, toLedgerMedian: 43_200, toLedgerP99: 85_680, acknowledged: 30, toAcknowledgementMedian: 50_000,
            toAcknowledgementP99: nil, unitsOwed: 4_000, unitsRecovered: 3_000)
        try await MetricsFile.write(
            to: .file(speedy), status: .succeeded, counters: counters, runID: 5, window: "w", dryRun: false, speed: speed,
            series: .googlePlayDaily)
        let speedText = try String(contentsOfFile: speedy, encoding: .utf8)
        #expect(speedText.contains(#"clawback_google_daily_refund_to_ledger_seconds{store="google_play",quantile="0.5"} 43200"#))
        #expect(speedText.contains(#"clawback_google_daily_refund_to_ledger_seconds{store="google_play",quantile="0.99"} 85680"#))
        #expect(speedText.contains(#"clawback_google_daily_refund_to_acknowledgement_seconds{store="google_play",quantile="0.5"} 50000"#))
        #expect(!speedText.contains(#"quantile="0.99"} 0"#), "no figure is not a zero")
        #expect(speedText.contains(#"clawback_google_daily_units_recovered_ratio{store="google_play"} 0.7500"#))

        // Google Play's daily run: apart from all three.
        let googleDaily = directory.appendingPathComponent("clawback-google-daily.prom").path
        try await MetricsFile.write(
            to: .file(googleDaily), status: .succeeded, counters: counters, runID: 4, window: "2026-09-01..2026-12-01", dryRun: false,
            pending: pending, series: .googlePlayDaily, now: Date(timeIntervalSince1970: 1_795_000_200))
        let googleDailyText = try String(contentsOfFile: googleDaily, encoding: .utf8)
        #expect(googleDailyText.contains(#"clawback_google_daily_requests{window="2026-09-01..2026-12-01"} 12"#))
        #expect(series(googleDailyText).isDisjoint(with: series(monthlyText).union(series(dailyText)).union(series(googleText))))
        #expect(
            series(googleDailyText).allSatisfy { $0.hasPrefix("clawback_google_daily_") || $0.contains("source=\"google_daily_run\"") })
    }

    @Test("a run's figures in the textfile format; the last success survives a later failed run")
    func metrics() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("clawback.prom").path
        var counters = RunCounters()
        counters.grantsInScope = 3000
        counters.checked = 3000
        counters.verdicts = [.ok: 2900, .refunded: 90, .unverified: 10]
        counters.unitsClawedBack = 54_000
        counters.missedNotifications = 2
        let succeededAt = Date(timeIntervalSince1970: 1_795_000_000)
        try await MetricsFile.write(
            to: .file(path), status: .succeeded, counters: counters, runID: 7, window: "2026-08-01..2026-11-01",
            dryRun: false, series: .monthly, now: succeededAt)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(value("clawback_last_success_timestamp_seconds", in: text) == "1795000000")
        #expect(text.contains(#"clawback_verdicts{window="2026-08-01..2026-11-01",verdict="refunded"} 90"#))
        #expect(text.contains(#"clawback_unverified_grants{window="2026-08-01..2026-11-01"} 10"#))
        #expect(text.contains(#"clawback_missed_notifications{window="2026-08-01..2026-11-01"} 2"#))
        #expect(text.contains(#"clawback_last_run_status{window="2026-08-01..2026-11-01",status="succeeded"} 1"#))
        #expect(text.contains("# TYPE clawback_units_clawed_back gauge"))

        try await MetricsFile.write(
            to: .file(path), status: .incomplete, counters: counters, runID: 8, window: "2026-08-01..2026-11-01",
            dryRun: false, series: .monthly, now: succeededAt + 86_400 * 31)
        let later = try String(contentsOfFile: path, encoding: .utf8)
        #expect(value("clawback_last_success_timestamp_seconds", in: later) == "1795000000")
        #expect(later.contains(#"status="incomplete"} 1"#))
        // Written through a temporary file and a rename: nothing else is left in the directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["clawback.prom"])
    }

    @Test("the Google Play sweep's file: what it read and kept, apps not read whole or too late; its last success survives a failed sweep")
    func sweep() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("clawback-google-voids.prom").path
        var outcome = GoogleVoidSweep.Outcome()
        outcome.apps = 2
        outcome.voidsRead = 40
        outcome.newVoids = 7
        try await MetricsFile.writeSweep(
            to: .file(path), outcome: outcome, succeeded: true, now: Date(timeIntervalSince1970: 1_795_000_000))
        outcome.unreadApps = ["com.studio.locked"]
        outcome.gaps = ["com.studio.locked"]
        try await MetricsFile.writeSweep(
            to: .file(path), outcome: outcome, succeeded: false, now: Date(timeIntervalSince1970: 1_795_086_400))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(value("clawback_google_sweep_last_success_timestamp_seconds", in: text) == "1795000000")
        #expect(value("clawback_google_sweep_last_run_timestamp_seconds", in: text) == "1795086400")
        #expect(value("clawback_google_sweep_voids_new", in: text) == "7" && value("clawback_google_sweep_voids_read", in: text) == "40")
        #expect(value("clawback_google_sweep_apps_not_read_whole", in: text) == "1" && value("clawback_google_sweep_apps_with_gap", in: text) == "1")
        #expect(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.allSatisfy { $0.hasPrefix("clawback_google_sweep_") })
    }
}
