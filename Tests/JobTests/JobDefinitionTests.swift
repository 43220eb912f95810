import AppStoreDriver
import Foundation
import GooglePlayDriver
import Job
import StripeDriver
import TestSupport
import Testing
import Yams

/// The deployment files in Jobs/ are part of the product: each is checked for what would make it fail
/// silently in production.
@Suite("Job definitions in Jobs/")
struct JobDefinitionTests {
    static let jobs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Jobs")

    static func text(_ path: String) throws -> String {
        try String(contentsOf: jobs.appendingPathComponent(path), encoding: .utf8)
    }

    /// Whether `field` of a crontab is valid for values in `range` (`*`, numbers, lists, ranges, steps).
    static func cronField(_ field: Substring, _ range: ClosedRange<Int>) -> Bool {
        field.split(separator: ",", omittingEmptySubsequences: false).allSatisfy { part in
            let pieces = part.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count <= 2, pieces.count == 1 || Int(pieces[1]).map({ $0 > 0 }) == true else { return false }
            if pieces[0] == "*" { return true }
            let bounds = pieces[0].split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            guard (1...2).contains(bounds.count), bounds.allSatisfy({ $0.map(range.contains) == true }) else { return false }
            return bounds.count == 1 || (bounds[0] ?? 0) <= (bounds[1] ?? 0)
        }
    }

    /// The one job line of an /etc/cron.d file, split into its seven fields, each schedule field valid.
    static func cronJob(_ path: String) throws -> [Substring] {
        let lines = try Self.text(path).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        let assignments = lines.filter { $0.range(of: #"^[A-Z_]+=.*$"#, options: .regularExpression) != nil }
        let jobs = lines.filter { !assignments.contains($0) }
        try #require(jobs.count == 1, "expected one job line, got \(jobs)")
        let fields = jobs[0].split(separator: " ", maxSplits: 6, omittingEmptySubsequences: true)
        try #require(fields.count == 7, "minute hour day month weekday user command")
        #expect(Self.cronField(fields[0], 0...59))
        #expect(Self.cronField(fields[1], 0...23))
        #expect(Self.cronField(fields[2], 1...31))
        #expect(Self.cronField(fields[3], 1...12))
        #expect(Self.cronField(fields[4], 0...7))
        #expect(fields[5] == "clawback")
        let command = fields[6].trimmingCharacters(in: .whitespaces)
        #expect(command.contains("--config /etc/clawback/clawback.yaml"))
        #expect(!command.contains("flock"), "the advisory lock does this job")
        #expect(!command.lowercased().contains("password"))
        // cron has no time zone of its own: each file says whose its times are.
        #expect(try Self.text(path).contains("time zone"), "\(path) does not say its time zone")
        return fields
    }

    @Test("the README's schedule table has a row for every cron definition, with its command and its time")
    func readmeSchedule() throws {
        let readme = try String(contentsOf: Self.jobs.deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        let rows = readme.split(separator: "\n").filter {
            $0.hasPrefix("| App Store |") || $0.hasPrefix("| Google Play |") || $0.hasPrefix("| Stripe |")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.jobs.appendingPathComponent("cron").path).filter {
            $0.hasSuffix(".cron")
        }
        #expect(rows.count == files.count, "\(rows.count) rows for \(files.count) cron files")
        for file in files {
            let (shown, when) = try Self.scheduled(file)
            #expect(rows.contains { $0.contains(shown) && $0.contains("| \(when) |") }, "no README row with \(shown) at \(when)")
        }
    }

    /// How the docs show the job of cron file `file`: its command as `clawback …` (without the binary's path
    /// and the options every definition has) and when it runs ("03:17 on the 1st", "04:23 daily", "minute 47, hourly").
    static func scheduled(_ file: String) throws -> (shown: String, when: String) {
        let fields = try Self.cronJob("cron/\(file)")
        let command = fields[6].split(separator: " ").dropFirst().prefix { !$0.hasPrefix("--config") }.joined(separator: " ")
        let extra = fields[6].split(separator: " ").drop { !$0.hasPrefix("--config") }.dropFirst(2).prefix {
            $0.hasPrefix("--") && $0 != "--log-format"
        }
        let shown = "`clawback " + ([command] + extra.map(String.init)).joined(separator: " ") + "`"
        let when =
            fields[1] == "*"
            ? "minute \(fields[0]), hourly"
            : String(format: "%02d:%02d", Int(fields[1]) ?? -1, Int(fields[0]) ?? -1) + (fields[2] == "1" ? " on the 1st" : " daily")
        return (shown, when)
    }

    @Test("each store's set-up guide is short, its configuration parses, and its jobs are the definitions' own, every job in one guide")
    func setupGuides() throws {
        let docs = Self.jobs.deletingLastPathComponent().appendingPathComponent("docs/setup")
        let guides = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        #expect(guides == ["app-store.md", "google-play.md", "stripe.md"])
        var covered: [String] = []
        for guide in guides {
            let text = try String(contentsOf: docs.appendingPathComponent(guide), encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count <= 100, "\(guide) is \(lines.count) lines: a set-up guide is short, the reference explains")
            // Its configuration, as an operator pastes it, is a configuration clawback reads.
            var block: [Substring]?
            for line in lines {
                if line == "```yaml" {
                    block = []
                } else if line == "```", let yaml = block {
                    #expect(throws: Never.self, "\(guide)'s configuration") {
                        _ = try ClawbackConfiguration.parseWithStores(yaml: yaml.joined(separator: "\n"))
                    }
                    block = nil
                } else {
                    block?.append(line)
                }
            }
            // Each job row: the cron file it names runs that command at that time, and its systemd and
            // Kubernetes definitions exist.
            for row in lines where row.hasPrefix("| ") && row.contains(".cron`") {
                let names = row.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
                let cron = try #require(names.first { $0.hasSuffix(".cron") }.map { String($0.split(separator: "/").last!) })
                covered.append(cron)
                let (shown, when) = try Self.scheduled(cron)
                #expect(row.contains(shown) && row.contains("| \(when) |"), "\(guide): \(cron) runs \(shown) at \(when)")
                for name in names where name.hasSuffix(".timer") || name.hasSuffix(".yaml") {
                    let file = String(name.split(separator: "/").last!)
                    let path =
                        file == ".timer"
                        ? "systemd/" + cron.replacingOccurrences(of: ".cron", with: ".timer")
                        : (file.hasSuffix(".timer") ? "systemd/" : "kubernetes/") + file
                    #expect(FileManager.default.fileExists(atPath: Self.jobs.appendingPathComponent(path).path), "\(guide): no Jobs/\(path)")
                }
            }
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.jobs.appendingPathComponent("cron").path).filter {
            $0.hasSuffix(".cron")
        }
        #expect(covered.sorted() == files.sorted(), "every job is in its store's set-up guide, once")
    }

    @Test("cron: one valid /etc/cron.d line, early on the 1st of each month, as the clawback user, running clawback run")
    func cron() throws {
        let fields = try Self.cronJob("cron/clawback.cron")
        #expect(fields[2] == "1" && fields[3] == "*" && fields[4] == "*", "monthly, on the 1st")
        #expect(Int(fields[1]).map { $0 < 8 } == true, "early in the day")
        #expect(fields[6].trimmingCharacters(in: .whitespaces).hasPrefix("/usr/local/bin/clawback run "))
        #expect(!Self.cronField("60", 0...59) && !Self.cronField("1-", 1...31) && Self.cronField("*/15", 0...59))
    }

    /// `[Section]` -> key -> values (a key may repeat).
    static func unit(_ path: String) throws -> [String: [String: [String]]] {
        var sections: [String: [String: [String]]] = [:]
        var current = ""
        for raw in try text(path).split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast())
                continue
            }
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            try #require(parts.count == 2 && !current.isEmpty, "not a key=value line in a section: \(line)")
            sections[current, default: [:]][String(parts[0]), default: []].append(String(parts[1]))
        }
        return sections
    }

    @Test("systemd: a hardened oneshot service that does not retry what retrying cannot fix, and a persistent monthly timer")
    func systemd() throws {
        let service = try Self.unit("systemd/clawback.service")
        let settings = try #require(service["Service"])
        #expect(settings["Type"] == ["oneshot"])
        #expect(settings["User"] == ["clawback"])
        #expect(settings["ExecStart"]?.first?.hasPrefix("/usr/local/bin/clawback run ") == true)
        #expect(settings["EnvironmentFile"] == ["/etc/clawback/clawback.env"])
        #expect(settings["KillSignal"] == ["SIGTERM"])
        let noRetry = Set(settings["RestartPreventExitStatus"]?.first?.split(separator: " ").map(String.init) ?? [])
        #expect(noRetry.isSuperset(of: ["64", "78", "85"]) && !noRetry.contains("75") && !noRetry.contains("69"))
        for (key, value) in [
            ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
            ("CapabilityBoundingSet", ""), ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
        ] {
            #expect(settings[key] == [value], "\(key)")
        }
        #expect(service["Unit"]?["After"]?.first?.contains("network-online.target") == true)

        let timer = try Self.unit("systemd/clawback.timer")
        let calendar = try #require(timer["Timer"]?["OnCalendar"]?.first)
        #expect(timer["Timer"]?["Persistent"] == ["true"])
        #expect(timer["Install"]?["WantedBy"] == ["timers.target"])
        // systemd's own parser accepts the expression and computes the next start on the 1st of a month.
        let text = try Self.nextElapse(calendar)
        #expect(text.range(of: #"Next elapse: \w{3} \d{4}-\d{2}-01 03:17:00 UTC"#, options: .regularExpression) != nil, "\(text)")

        let environment = try Self.text("systemd/clawback.env")
        #expect(
            !environment.contains(":*@") && environment.range(of: #"//[^/@]*:[^/@]*@"#, options: .regularExpression) == nil,
            "no password in the database URL")
    }

    /// `systemd-analyze calendar`'s answer for `expression` (its own parser; it must accept it).
    static func nextElapse(_ expression: String) throws -> String {
        let result = try CommandRunner.run(executable: URL(fileURLWithPath: "/usr/bin/systemd-analyze"), ["calendar", expression])
        let text = result.standardOutput + result.standardError
        #expect(result.status == 0 && !result.killedBySignal, "\(text)")
        return text
    }

    @Test("refund requests, hourly: a cron line, a hardened oneshot with its own metrics file and an hourly persistent timer, a Forbid CronJob")
    func refundRequests() throws {
        try Self.checkHourly("refund-requests", command: ["refund-requests", "answer"], minute: 47)
    }

    @Test(
        "Google's notifications and chargeback reviews, hourly: a cron line, a hardened oneshot with its own metrics file and an hourly persistent timer, a Forbid CronJob with Google's keys"
    )
    func googleNotifications() throws {
        try Self.checkHourly("google-notifications", command: ["google-play", "notifications"], minute: 23)
        let cronJob = try Self.yaml("kubernetes/google-notifications-cronjob.yaml")
        let volumes = Self.path(cronJob, "spec", "jobTemplate", "spec", "template", "spec", "volumes") as? [[String: Any]] ?? []
        #expect(volumes.contains { Self.path($0, "secret", "secretName") as? String == "clawback-google-keys" })
        #expect(!volumes.contains { Self.path($0, "secret", "secretName") as? String == "clawback-apple-keys" }, "a Google job holds no Apple key")
    }

    /// An hourly job `name` (cron/clawback-NAME.cron, systemd/clawback-NAME.service and .timer,
    /// kubernetes/NAME-cronjob.yaml) running `clawback COMMAND` at `minute`.
    static func checkHourly(_ name: String, command: [String], minute: Int) throws {
        let invocation = "/usr/local/bin/clawback " + command.joined(separator: " ") + " "
        let fields = try Self.cronJob("cron/clawback-\(name).cron")
        #expect(Int(fields[0]) == minute && fields[1...4].allSatisfy { $0 == "*" }, "hourly, at a fixed minute")
        #expect(fields[6].trimmingCharacters(in: .whitespaces).hasPrefix(invocation))

        let service = try Self.unit("systemd/clawback-\(name).service")
        let settings = try #require(service["Service"])
        #expect(settings["Type"] == ["oneshot"])
        #expect(settings["User"] == ["clawback"])
        let start = try #require(settings["ExecStart"]?.first)
        #expect(start.hasPrefix(invocation))
        // Its own metrics file: the monthly run's (CLAWBACK_METRICS_FILE) must not be overwritten.
        let metrics = try #require(start.range(of: #"--metrics-file \S+"#, options: .regularExpression).map { start[$0] })
        #expect(metrics.hasSuffix("/clawback-\(name).prom"))
        // The metrics directory is writable, and optional ('-'): a machine without node_exporter still runs the unit.
        #expect(
            settings["ReadWritePaths"]?.first.map { $0.hasPrefix("-") && metrics.dropFirst("--metrics-file ".count).hasPrefix($0.dropFirst()) }
                == true)
        #expect(settings["Restart"] == nil, "the next hour retries")
        for (key, value) in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("CapabilityBoundingSet", "")] {
            #expect(settings[key] == [value], "\(key)")
        }
        let timer = try Self.unit("systemd/clawback-\(name).timer")
        #expect(timer["Timer"]?["Persistent"] == ["true"])
        #expect(timer["Timer"]?["Unit"] == ["clawback-\(name).service"])
        let calendar = try #require(timer["Timer"]?["OnCalendar"]?.first)
        #expect(try Self.nextElapse(calendar).range(of: #"Next elapse: .* \d{2}:\#(minute):00 UTC"#, options: .regularExpression) != nil)

        let cronJob = try Self.yaml("kubernetes/\(name)-cronjob.yaml")
        #expect(cronJob["kind"] as? String == "CronJob")
        #expect(Self.path(cronJob, "metadata", "name") as? String == "clawback-\(name)")
        #expect(Self.path(cronJob, "spec", "concurrencyPolicy") as? String == "Forbid")
        #expect((Self.path(cronJob, "spec", "startingDeadlineSeconds") as? Int).map { $0 > 0 && $0 < 3600 } == true)
        let schedule = try #require(Self.path(cronJob, "spec", "schedule") as? String).split(separator: " ")
        #expect(schedule.count == 5 && Int(schedule[0]) == minute && schedule[1...].allSatisfy { $0 == "*" })
        let job = Self.path(cronJob, "spec", "jobTemplate", "spec")
        #expect((Self.path(job, "activeDeadlineSeconds") as? Int).map { $0 < 3600 } == true, "done before the next hour")
        try Self.checkJobSpec(job, file: "\(name)-cronjob.yaml", command: command)
    }

    @Test("the daily run: a cron line, a hardened oneshot with its own metrics file and a persistent daily timer, a Forbid CronJob")
    func daily() throws {
        let fields = try Self.cronJob("cron/clawback-daily.cron")
        #expect(Int(fields[0]) != nil && Int(fields[1]) != nil && fields[2...4].allSatisfy { $0 == "*" }, "daily, at a fixed time")
        let command = fields[6].trimmingCharacters(in: .whitespaces)
        #expect(command.hasPrefix("/usr/local/bin/clawback run --daily "))
        // Never the monthly run's metrics file: its last success must stay the monthly run's.
        #expect(!command.contains("/clawback.prom"))

        let service = try Self.unit("systemd/clawback-daily.service")
        let settings = try #require(service["Service"])
        #expect(settings["Type"] == ["oneshot"])
        #expect(settings["User"] == ["clawback"])
        let start = try #require(settings["ExecStart"]?.first)
        #expect(start.hasPrefix("/usr/local/bin/clawback run --daily "))
        let metrics = try #require(start.range(of: #"--metrics-file \S+"#, options: .regularExpression).map { start[$0] })
        #expect(!metrics.hasSuffix("/clawback.prom"))
        let noRetry = Set(settings["RestartPreventExitStatus"]?.first?.split(separator: " ").map(String.init) ?? [])
        #expect(noRetry.isSuperset(of: ["64", "78", "85"]) && !noRetry.contains("75") && !noRetry.contains("69"))
        for (key, value) in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("CapabilityBoundingSet", "")] {
            #expect(settings[key] == [value], "\(key)")
        }
        let timer = try Self.unit("systemd/clawback-daily.timer")
        #expect(timer["Timer"]?["Persistent"] == ["true"])
        #expect(timer["Timer"]?["Unit"] == ["clawback-daily.service"])
        let calendar = try #require(timer["Timer"]?["OnCalendar"]?.first)
        #expect(try Self.nextElapse(calendar).range(of: #"Next elapse: .* 04:23:00 UTC"#, options: .regularExpression) != nil)

        let cronJob = try Self.yaml("kubernetes/daily-cronjob.yaml")
        #expect(cronJob["kind"] as? String == "CronJob")
        #expect(Self.path(cronJob, "metadata", "name") as? String == "clawback-daily")
        #expect(Self.path(cronJob, "spec", "concurrencyPolicy") as? String == "Forbid")
        let schedule = try #require(Self.path(cronJob, "spec", "schedule") as? String).split(separator: " ")
        #expect(schedule.count == 5 && Int(schedule[0]) != nil && Int(schedule[1]) != nil && schedule[2...].allSatisfy { $0 == "*" })
        let job = Self.path(cronJob, "spec", "jobTemplate", "spec")
        #expect((Self.path(job, "activeDeadlineSeconds") as? Int).map { $0 < 86_400 } == true, "done before the next day")
        try Self.checkJobSpec(job, file: "daily-cronjob.yaml", command: ["run", "--daily"])
    }

    @Test("the Google Play sweep: a daily cron line, a hardened daily oneshot and persistent timer, a Forbid CronJob with the Google key's Secret")
    func googleVoids() throws {
        let fields = try Self.cronJob("cron/clawback-google-voids.cron")
        #expect(Int(fields[0]) != nil && Int(fields[1]) != nil && fields[2...4].allSatisfy { $0 == "*" }, "daily, at a fixed time")
        #expect(fields[6].trimmingCharacters(in: .whitespaces).hasPrefix("/usr/local/bin/clawback google-play sweep-voids "))

        let service = try Self.unit("systemd/clawback-google-voids.service")
        let settings = try #require(service["Service"])
        #expect(settings["Type"] == ["oneshot"] && settings["User"] == ["clawback"])
        #expect(settings["ExecStart"]?.first?.hasPrefix("/usr/local/bin/clawback google-play sweep-voids ") == true)
        let noRetry = Set(settings["RestartPreventExitStatus"]?.first?.split(separator: " ").map(String.init) ?? [])
        #expect(noRetry.isSuperset(of: ["64", "78", "85"]) && !noRetry.contains("75") && !noRetry.contains("69"))
        for (key, value) in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("CapabilityBoundingSet", "")] {
            #expect(settings[key] == [value], "\(key)")
        }
        let timer = try Self.unit("systemd/clawback-google-voids.timer")
        #expect(timer["Timer"]?["Persistent"] == ["true"] && timer["Timer"]?["Unit"] == ["clawback-google-voids.service"])
        let calendar = try #require(timer["Timer"]?["OnCalendar"]?.first)
        #expect(try Self.nextElapse(calendar).range(of: #"Next elapse: .* 05:41:00 UTC"#, options: .regularExpression) != nil)

        let cronJob = try Self.yaml("kubernetes/google-voids-cronjob.yaml")
        #expect(Self.path(cronJob, "metadata", "name") as? String == "clawback-google-voids")
        #expect(Self.path(cronJob, "spec", "concurrencyPolicy") as? String == "Forbid")
        let job = Self.path(cronJob, "spec", "jobTemplate", "spec")
        try Self.checkJobSpec(job, file: "google-voids-cronjob.yaml", command: ["google-play", "sweep-voids"])
        let volumes = Self.path(job, "template", "spec", "volumes") as? [[String: Any]] ?? []
        #expect(volumes.contains { Self.path($0, "secret", "secretName") as? String == "clawback-google-keys" })
    }

    @Test("Google Play's monthly run: a monthly cron line, a hardened oneshot and timer, a Forbid CronJob, own metrics, Google's Secret")
    func googleMonthly() throws {
        let fields = try Self.cronJob("cron/clawback-google.cron")
        #expect(Int(fields[0]) != nil && Int(fields[1]) != nil && fields[2] == "1" && fields[3...4].allSatisfy { $0 == "*" }, "monthly")
        let command = fields[6].trimmingCharacters(in: .whitespaces)
        #expect(command.hasPrefix("/usr/local/bin/clawback run --strategy google-orders "))
        #expect(command.contains("--metrics-file ") && !command.contains("/clawback.prom"))

        let service = try Self.unit("systemd/clawback-google.service")
        let settings = try #require(service["Service"])
        #expect(settings["Type"] == ["oneshot"] && settings["User"] == ["clawback"])
        let start = try #require(settings["ExecStart"]?.first)
        #expect(start.hasPrefix("/usr/local/bin/clawback run --strategy google-orders ") && start.contains("/clawback-google.prom"))
        let noRetry = Set(settings["RestartPreventExitStatus"]?.first?.split(separator: " ").map(String.init) ?? [])
        #expect(noRetry.isSuperset(of: ["64", "78", "85"]) && !noRetry.contains("75") && !noRetry.contains("69"))
        for (key, value) in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("CapabilityBoundingSet", "")] {
            #expect(settings[key] == [value], "\(key)")
        }
        let timer = try Self.unit("systemd/clawback-google.timer")
        #expect(timer["Timer"]?["Persistent"] == ["true"] && timer["Timer"]?["Unit"] == ["clawback-google.service"])
        let calendar = try #require(timer["Timer"]?["OnCalendar"]?.first)
        #expect(try Self.nextElapse(calendar).range(of: #"Next elapse: .* 04:17:00 UTC"#, options: .regularExpression) != nil)

        let cronJob = try Self.yaml("kubernetes/google-cronjob.yaml")
        #expect(Self.path(cronJob, "metadata", "name") as? String == "clawback-google")
        #expect(Self.path(cronJob, "spec", "concurrencyPolicy") as? String == "Forbid")
        let job = Self.path(cronJob, "spec", "jobTemplate", "spec")
        try Self.checkJobSpec(job, file: "google-cronjob.yaml", command: ["run", "--strategy", "google-orders"])
        let volumes = Self.path(job, "template", "spec", "volumes") as? [[String: Any]] ?? []
        #expect(volumes.contains { Self.path($0, "secret", "secretName") as? String == "clawback-google-keys" })
        #expect(!volumes.contains { Self.path($0, "secret", "secretName") as? String == "clawback-apple-keys" })
    }

    @Test(
        "Google Play's daily run: a daily cron line after the sweep's, a hardened oneshot and persistent timer, a Forbid CronJob, own metrics, Google's Secret only"
    )
    func googleDaily() throws {
        let fields = try Self.cronJob("cron/clawback-google-daily.cron")
        let sweep = try Self.cronJob("cron/clawback-google-voids.cron")
        #expect(fields[2...4].allSatisfy { $0 == "*" }, "daily")
        let minutes = { (fields: [Substring]) in (Int(fields[1]) ?? 0) * 60 + (Int(fields[0]) ?? 0) }
        #expect(minutes(fields) > minutes(sweep), "after the day's sweep")
        let command = fields[6].trimmingCharacters(in: .whitespaces)
        #expect(command.hasPrefix("/usr/local/bin/clawback run --daily --strategy google-orders "))
        #expect(command.contains("/clawback-google-daily.prom"))

        let service = try Self.unit("systemd/clawback-google-daily.service")
        let settings = try #require(service["Service"])
        #expect(settings["Type"] == ["oneshot"] && settings["User"] == ["clawback"])
        let start = try #require(settings["ExecStart"]?.first)
        #expect(start.hasPrefix("/usr/local/bin/clawback run --daily --strategy google-orders ") && start.contains("/clawback-google-daily.prom"))
        #expect(service["Unit"]?["After"]?.first?.contains("clawback-google-voids.service") == true)
        let noRetry = Set(settings["RestartPreventExitStatus"]?.first?.split(separator: " ").map(String.init) ?? [])
        #expect(noRetry.isSuperset(of: ["64", "78", "85"]) && !noRetry.contains("75") && !noRetry.contains("69"))
        for (key, value) in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("CapabilityBoundingSet", "")] {
            #expect(settings[key] == [value], "\(key)")
        }
        let timer = try Self.unit("systemd/clawback-google-daily.timer")
        #expect(timer["Timer"]?["Persistent"] == ["true"] && timer["Timer"]?["Unit"] == ["clawback-google-daily.service"])
        let calendar = try #require(timer["Timer"]?["OnCalendar"]?.first)
        #expect(try Self.nextElapse(calendar).range(of: #"Next elapse: .* 06:11:00 UTC"#, options: .regularExpression) != nil)

        let cronJob = try Self.yaml("kubernetes/google-daily-cronjob.yaml")
        #expect(Self.path(cronJob, "metadata", "name") as? String == "clawback-google-daily")
        #expect(Self.path(cronJob, "spec", "schedule") as? String == "11 6 * * *")
        #expect(Self.path(cronJob, "spec", "concurrencyPolicy") as? String == "Forbid")
        let job = Self.path(cronJob, "spec", "jobTemplate", "spec")
        #expect((Self.path(job, "activeDeadlineSeconds") as? Int).map { $0 < 86_400 } == true, "done before the next day")
        try Self.checkJobSpec(job, file: "google-daily-cronjob.yaml", command: ["run", "--daily", "--strategy", "google-orders"])
        let volumes = Self.path(job, "template", "spec", "volumes") as? [[String: Any]] ?? []
        #expect(volumes.contains { Self.path($0, "secret", "secretName") as? String == "clawback-google-keys" })
        #expect(!volumes.contains { Self.path($0, "secret", "secretName") as? String == "clawback-apple-keys" })
    }

    @Test(
        "the web shop's Stripe jobs: the monthly and daily runs and the hourly disputes, each a cron line, a hardened oneshot and persistent timer, a Forbid CronJob with Stripe's Secret only"
    )
    func stripeJobs() throws {
        try Self.checkHourly("stripe-disputes", command: ["stripe", "disputes"], minute: 37)
        for (name, command, time, schedule) in [
            ("stripe", ["run", "--strategy", "stripe-payments"], "04:47", "47 4 1 * *"),
            ("stripe-daily", ["run", "--daily", "--strategy", "stripe-payments"], "06:41", "41 6 * * *"),
        ] {
            let invocation = "/usr/local/bin/clawback " + command.joined(separator: " ") + " "
            let fields = try Self.cronJob("cron/clawback-\(name).cron")
            #expect(fields[0...1].joined(separator: " ") + " " + fields[2...4].joined(separator: " ") == schedule, "\(name)")
            #expect(fields[6].trimmingCharacters(in: .whitespaces).hasPrefix(invocation) && fields[6].contains("/clawback-\(name).prom"))
            let service = try Self.unit("systemd/clawback-\(name).service")
            let settings = try #require(service["Service"])
            #expect(settings["Type"] == ["oneshot"] && settings["User"] == ["clawback"])
            let start = try #require(settings["ExecStart"]?.first)
            #expect(start.hasPrefix(invocation) && start.contains("/clawback-\(name).prom"))
            let noRetry = Set(settings["RestartPreventExitStatus"]?.first?.split(separator: " ").map(String.init) ?? [])
            #expect(noRetry.isSuperset(of: ["64", "78", "85"]) && !noRetry.contains("75") && !noRetry.contains("69"))
            for (key, value) in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("CapabilityBoundingSet", "")] {
                #expect(settings[key] == [value], "\(key)")
            }
            let timer = try Self.unit("systemd/clawback-\(name).timer")
            #expect(timer["Timer"]?["Persistent"] == ["true"] && timer["Timer"]?["Unit"] == ["clawback-\(name).service"])
            let calendar = try #require(timer["Timer"]?["OnCalendar"]?.first)
            #expect(try Self.nextElapse(calendar).range(of: #"Next elapse: .* \#(time):00 UTC"#, options: .regularExpression) != nil, "\(name)")
            let cronJob = try Self.yaml("kubernetes/\(name)-cronjob.yaml")
            #expect(Self.path(cronJob, "metadata", "name") as? String == "clawback-\(name)")
            #expect(Self.path(cronJob, "spec", "schedule") as? String == schedule)
            #expect(Self.path(cronJob, "spec", "concurrencyPolicy") as? String == "Forbid")
            try Self.checkJobSpec(Self.path(cronJob, "spec", "jobTemplate", "spec"), file: "\(name)-cronjob.yaml", command: command)
        }
        for name in ["stripe", "stripe-daily", "stripe-disputes"] {
            let volumes =
                Self.path(try Self.yaml("kubernetes/\(name)-cronjob.yaml"), "spec", "jobTemplate", "spec", "template", "spec", "volumes")
                as? [[String: Any]] ?? []
            let secrets = Set(volumes.compactMap { Self.path($0, "secret", "secretName") as? String })
            #expect(secrets == ["clawback-stripe-key", "clawback-db-password"], "\(name) holds Stripe's key and no other store's: \(secrets)")
        }
    }

    @Test("every alert of the Prometheus rule file has a unit test where it fires and one where it stays quiet, on series the jobs write")
    func alertRules() throws {
        let rules = try Self.yaml("prometheus/clawback-rules.yml")
        let tests = try Self.yaml("prometheus/clawback-rules.test.yml")
        let alerts = (rules["groups"] as? [[String: Any]] ?? []).flatMap { $0["rules"] as? [[String: Any]] ?? [] }
        let names = alerts.compactMap { $0["alert"] as? String }
        #expect(names.count >= 20 && Set(names).count == names.count)
        let cases = (tests["tests"] as? [[String: Any]] ?? []).flatMap { $0["alert_rule_test"] as? [[String: Any]] ?? [] }
        for name in names {
            let mine = cases.filter { $0["alertname"] as? String == name }
            #expect(mine.contains { !($0["exp_alerts"] as? [Any] ?? []).isEmpty }, "\(name) is never shown firing")
            #expect(mine.contains { ($0["exp_alerts"] as? [Any] ?? []).isEmpty }, "\(name) is never shown quiet")
        }
        // The series the alerts read are ones clawback writes: each name, less `clawback_` and its job's prefix,
        // is a series the metrics code names (in a name pattern, the part after the store's optional prefix).
        let root = Self.jobs.deletingLastPathComponent()
        let sources = try FileManager.default.subpathsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
            .filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: root.appendingPathComponent("Sources/" + $0), encoding: .utf8) }
            .joined()
        let prefixes = ["google_sweep_", "google_notifications_", "stripe_disputes_", "refund_requests_", "google_", "stripe_", "daily_"]
        for alert in alerts {
            let expression = alert["expr"] as? String ?? ""
            var series = expression.matches(of: try Regex(#"clawback_[a-z_]+[a-z]"#)).map {
                String(expression[$0.range].dropFirst("clawback_".count))
            }
            series += expression.matches(of: try Regex(#"\)\?([a-z_]+[a-z])"#)).map { String(expression[$0.range].dropFirst(2)) }
            #expect(!series.isEmpty, "\(alert["alert"] ?? "?") reads no clawback series")
            for name in series {
                var suffix = name
                while let prefix = prefixes.first(where: { suffix.hasPrefix($0) && sources.contains("clawback_" + $0) }) {
                    suffix = String(suffix.dropFirst(prefix.count))
                }
                #expect(
                    sources.contains("clawback_" + name) || sources.contains("\"\(suffix)\""),
                    "\(alert["alert"] ?? "?") reads \(name), which no metrics code writes")
            }
        }
    }

    /// A manifest's pod: a CronJob's, a Job's.
    static func pod(_ manifest: [String: Any]) -> [String: Any]? {
        (path(manifest, "spec", "jobTemplate", "spec", "template", "spec") ?? path(manifest, "spec", "template", "spec")) as? [String: Any]
    }

    /// Where each volume of `pod` that holds a Secret is mounted in its container, by the Secret's name, and
    /// whether the Secret is optional.
    static func mounts(_ pod: [String: Any]) -> [String: (path: String, optional: Bool)] {
        let volumes = pod["volumes"] as? [[String: Any]] ?? []
        let container = (pod["containers"] as? [[String: Any]])?.first
        let mounts = container?["volumeMounts"] as? [[String: Any]] ?? []
        var result: [String: (path: String, optional: Bool)] = [:]
        for volume in volumes {
            let source = (volume["secret"] as? [String: Any]).map { ($0["secretName"] as? String, $0["optional"] as? Bool ?? false) }
            guard let (name, optional) = source, let name, let mount = mounts.first(where: { $0["name"] as? String == volume["name"] as? String })
            else { continue }
            result[name] = (mount["mountPath"] as? String ?? "", optional)
        }
        return result
    }

    @Test(
        "Kubernetes' first run, as operations.md spells it: every Secret a manifest mounts is created, every CronJob applied; config-check-job mounts every Secret a CronJob does at the same path, and every file the ConfigMap names lies under one of its mounts"
    )
    func kubernetesFirstRunSteps() throws {
        let operations = try String(
            contentsOf: Self.jobs.deletingLastPathComponent().appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let start = try #require(operations.range(of: "### Kubernetes, the first run"))
        let steps = String(operations[start.upperBound...].prefix(4_000))
        let directory = Self.jobs.appendingPathComponent("kubernetes")
        let manifests = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }.sorted()
        var cronJobSecrets: [String: String] = [:]
        for file in manifests {
            let manifest = try Self.yaml("kubernetes/\(file)")
            if manifest["kind"] as? String == "CronJob" {
                #expect(steps.contains("-f \(file)"), "the first run does not apply \(file)")
            }
            guard let pod = Self.pod(manifest) else { continue }
            for (secret, mount) in Self.mounts(pod) where !mount.optional {
                #expect(steps.contains("kubectl create secret generic \(secret) "), "\(file) mounts \(secret), which the first run never creates")
                if manifest["kind"] as? String == "CronJob" { cronJobSecrets[secret] = mount.path }
            }
        }
        let check = try #require(Self.pod(try Self.yaml("kubernetes/config-check-job.yaml")))
        let checked = Self.mounts(check)
        for (secret, mountPath) in cronJobSecrets {
            #expect(checked[secret]?.path == mountPath, "config-check-job does not mount \(secret) where the CronJobs do")
        }
        // Every file the ConfigMap's configuration names is where config check can read it.
        let configMap = try Self.yaml("kubernetes/configmap.yaml")
        let configuration = try #require(Self.path(configMap, "data", "clawback.yaml") as? String)
        let files = configuration.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces).drop { $0 == "-" || $0 == " " }
            guard !trimmed.hasPrefix("#"), let colon = trimmed.firstIndex(of: ":"),
                ["key_file", "service_account_key_file", "password_file", "api_key_file"].contains(String(trimmed[..<colon]))
            else { return nil }
            return trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        #expect(files.count >= 4, "the Apple key, the Google key, the Stripe key and the password file")
        for file in files {
            #expect(checked.values.contains { file.hasPrefix($0.path + "/") }, "config-check-job cannot read \(file)")
        }
        let configured = try ClawbackConfiguration.parseWithStores(yaml: configuration, baseDirectory: "/etc/clawback")
        #expect(!configured.apps.isEmpty && !configured.googleApps.isEmpty && configured.google.notifications != nil, "both app stores")
        #expect(configured.settings(of: StripeStore.store) != nil, "and the web shop")
    }

    static func yaml(_ path: String) throws -> [String: Any] {
        try #require(try Yams.load(yaml: text(path)) as? [String: Any], "\(path) is not a YAML mapping")
    }

    static func path(_ object: Any?, _ keys: String...) -> Any? {
        keys.reduce(object) { ($0 as? [String: Any])?[$1] }
    }

    /// The pod spec's checks shared by the CronJob and the Indexed Job.
    static func checkJobSpec(_ job: Any?, file: String, command: [String] = ["run"]) throws {
        #expect((path(job, "backoffLimit") as? Int).map { $0 > 0 } == true, "\(file): retries resume the run")
        let rules = try #require(path(job, "podFailurePolicy", "rules") as? [[String: Any]], "\(file): podFailurePolicy")
        let failJob = try #require(rules.first { $0["action"] as? String == "FailJob" }, "\(file): a FailJob rule")
        #expect(path(failJob, "onExitCodes", "operator") as? String == "In")
        let codes = Set(path(failJob, "onExitCodes", "values") as? [Int] ?? [])
        #expect(codes.isSuperset(of: [64, 78]), "\(file): configuration and usage errors are not retried")
        #expect(!codes.contains(75) && !codes.contains(69), "\(file): unverified grants and outages are retried")
        let pod = path(job, "template", "spec")
        #expect(path(pod, "restartPolicy") as? String == "Never", "\(file): podFailurePolicy requires restartPolicy Never")
        #expect(path(pod, "automountServiceAccountToken") as? Bool == false, "\(file): no Kubernetes API token in a pod that never calls it")
        #expect(path(pod, "securityContext", "runAsNonRoot") as? Bool == true)
        let container = try #require((path(pod, "containers") as? [[String: Any]])?.first)
        #expect(container["name"] as? String == path(failJob, "onExitCodes", "containerName") as? String)
        #expect((container["args"] as? [String]).map { Array($0.prefix(command.count)) } == command, "\(file): runs clawback \(command)")
        // Secrets are files: secret volumes, never secretKeyRef environment variables.
        let environment = container["env"] as? [[String: Any]] ?? []
        #expect(environment.allSatisfy { $0["valueFrom"] == nil }, "\(file): secrets come as files")
        let volumes = path(pod, "volumes") as? [[String: Any]] ?? []
        let secrets = volumes.compactMap { $0["secret"] as? [String: Any] }
        #expect(secrets.count >= 2, "\(file): the Apple keys and the database password")
        #expect(secrets.allSatisfy { ($0["defaultMode"] as? Int).map { $0 & 0o037 == 0 } == true }, "\(file): key files the check accepts")
        try checkDatabaseMounts(pod: pod, container: container, file: file)
    }

    /// The database's password and CA are where the configuration and the URL say: the password file the
    /// ConfigMap names is the mounted Secret's `password` key, readable by the pod's group (fsGroup) and by
    /// no one else (the clean-root test logs in with such a file); the URL's sslrootcert is a mounted file.
    static func checkDatabaseMounts(pod: Any?, container: [String: Any], file: String) throws {
        let configMap = try yaml("kubernetes/configmap.yaml")
        let configuration = try ClawbackConfiguration.parseWithStores(yaml: try #require(path(configMap, "data", "clawback.yaml") as? String))
        let passwordFile = try #require(configuration.database.passwordFile, "configmap.yaml: database.password_file")
        let mounts = container["volumeMounts"] as? [[String: Any]] ?? []
        let volumes = path(pod, "volumes") as? [[String: Any]] ?? []
        func volume(mountedAbove file: String) -> [String: Any]? {
            guard let mount = mounts.first(where: { ($0["mountPath"] as? String).map { file.hasPrefix($0 + "/") } == true }) else { return nil }
            return volumes.first { $0["name"] as? String == mount["name"] as? String }
        }
        let password = try #require(volume(mountedAbove: passwordFile)?["secret"] as? [String: Any], "\(file): \(passwordFile) is a Secret")
        #expect(passwordFile.hasSuffix("/password") && password["secretName"] as? String == "clawback-db-password")
        #expect(password["defaultMode"] as? Int == 0o440, "\(file): the mode clawback's password_file rule accepts under fsGroup")
        #expect(path(pod, "securityContext", "fsGroup") as? Int == path(pod, "securityContext", "runAsGroup") as? Int)
        let url = try #require(
            (container["env"] as? [[String: Any]])?.first { $0["name"] as? String == "CLAWBACK_DATABASE_URL" }?["value"] as? String)
        #expect(url.contains("sslmode=verify-full"), "\(file)")
        let rootCert = try #require(url.firstRange(of: "sslrootcert=").map { String(url[$0.upperBound...].prefix { $0 != "&" }) })
        #expect(volume(mountedAbove: rootCert)?["configMap"] != nil, "\(file): \(rootCert) is mounted")
    }

    @Test("Kubernetes CronJob: Forbid, a starting deadline, retries, and a failure policy that does not retry configuration errors")
    func kubernetesCronJob() throws {
        let cronJob = try Self.yaml("kubernetes/cronjob.yaml")
        #expect(cronJob["kind"] as? String == "CronJob")
        #expect(Self.path(cronJob, "spec", "concurrencyPolicy") as? String == "Forbid")
        #expect((Self.path(cronJob, "spec", "startingDeadlineSeconds") as? Int).map { $0 > 0 } == true)
        let schedule = try #require(Self.path(cronJob, "spec", "schedule") as? String).split(separator: " ")
        #expect(schedule.count == 5 && schedule[2] == "1")
        #expect(Self.path(cronJob, "spec", "timeZone") as? String == "Etc/UTC")
        try Self.checkJobSpec(Self.path(cronJob, "spec", "jobTemplate", "spec"), file: "cronjob.yaml")

        let configMap = try Self.yaml("kubernetes/configmap.yaml")
        let configuration = try ClawbackConfiguration.parseWithStores(yaml: try #require(Self.path(configMap, "data", "clawback.yaml") as? String))
        #expect(configuration.apps.first?.keyFile.hasPrefix("/etc/clawback/keys/") == true)
        // A pod's textfile is gone with it: every job's metrics are pushed.
        #expect(configuration.metrics.pushgatewayURL?.hasPrefix("http://") == true, "configmap.yaml: metrics.pushgateway_url")
    }

    @Test("Kubernetes Indexed Job: one pod per shard, the shard count given to clawback equals the completions")
    func kubernetesIndexedJob() throws {
        let job = try Self.yaml("kubernetes/indexed-job.yaml")
        #expect(job["kind"] as? String == "Job")
        let spec = Self.path(job, "spec")
        #expect(Self.path(spec, "completionMode") as? String == "Indexed")
        let completions = try #require(Self.path(spec, "completions") as? Int)
        #expect(Self.path(spec, "parallelism") as? Int == completions)
        let args = try #require((Self.path(spec, "template", "spec", "containers") as? [[String: Any]])?.first?["args"] as? [String])
        let shards = try #require(args.firstIndex(of: "--shards").map { args[$0 + 1] })
        #expect(Int(shards) == completions)
        try Self.checkJobSpec(spec, file: "indexed-job.yaml")
    }

    @Test(
        "container build: the release build script on the toolchain version the suite runs on; the runtime installs runtime-packages.txt, as the clean-root test does, and runs unprivileged"
    )
    func containerfile() throws {
        let lines = try Self.text("container/Dockerfile").split(separator: "\n").filter { !$0.hasPrefix("#") }
        let stages = lines.filter { $0.hasPrefix("FROM ") }
        #expect(stages.count == 2)
        // The build stage's Swift is the one this suite was built with (the compiler's version, checked here).
        #if compiler(>=6.3) && !compiler(>=6.4)
            #expect(stages.first?.hasPrefix("FROM swift:6.3.") == true && stages.first?.hasSuffix("-bookworm AS build") == true)
        #else
            Issue.record("the Dockerfile's build stage names Swift 6.3; this suite was built with another compiler: update both")
        #endif
        #expect(lines.contains { $0.contains("bash Jobs/release/build.sh") }, "the image is built as a release is")
        #expect(stages.last?.contains("debian:bookworm-slim") == true)
        let runtime = lines.drop { !$0.hasPrefix("FROM debian") }.joined(separator: "\n")
        #expect(runtime.contains("COPY Jobs/release/runtime-packages.txt") && runtime.contains("xargs apt-get install"))
        #expect(!runtime.contains("-dev"), "no build packages in the runtime image")
        #expect(lines.contains { $0.hasPrefix("USER ") && !$0.contains("root") && !$0.contains(" 0") })
        #expect(lines.contains { $0.hasPrefix("COPY --from=build /out/bin/clawback ") })
    }

    @Test(
        "Kubernetes first run: one-off migrate and config check Jobs mount what the CronJobs mount; the reports claim is the one they name, shared by shards"
    )
    func kubernetesFirstRun() throws {
        for (file, command) in [("migrate-job.yaml", ["migrate"]), ("config-check-job.yaml", ["config", "check"])] {
            let job = try Self.yaml("kubernetes/\(file)")
            #expect(job["kind"] as? String == "Job")
            #expect(Self.path(job, "metadata", "name") as? String != nil, "\(file): a name, so that kubectl logs job/NAME finds it")
            #expect(Self.path(job, "spec", "backoffLimit") as? Int == 0, "\(file): its answer is for a person; a retry says the same")
            let pod = Self.path(job, "spec", "template", "spec")
            let container = try #require((Self.path(pod, "containers") as? [[String: Any]])?.first)
            #expect((container["args"] as? [String]).map { Array($0.prefix(command.count)) } == command, "\(file)")
            try Self.checkDatabaseMounts(pod: pod, container: container, file: file)
        }
        let claim = try Self.yaml("kubernetes/reports-pvc.yaml")
        #expect(claim["kind"] as? String == "PersistentVolumeClaim")
        #expect((Self.path(claim, "spec", "accessModes") as? [String])?.contains("ReadWriteMany") == true, "the Indexed Job's pods write at once")
        let name = try #require(Self.path(claim, "metadata", "name") as? String)
        for file in ["cronjob.yaml", "indexed-job.yaml"] {
            let text = try Self.text("kubernetes/\(file)")
            #expect(text.contains("claimName: \(name)"), "\(file) mounts the claim reports-pvc.yaml creates")
        }
    }

    @Test(
        "the egress NetworkPolicy selects every pod the manifests make, admits no ingress, and lets out only DNS, PostgreSQL, the Pushgateway and HTTPS outside the private ranges"
    )
    func egressPolicy() throws {
        let policy = try Self.yaml("kubernetes/networkpolicy.yaml")
        #expect(policy["kind"] as? String == "NetworkPolicy")
        let selector = try #require(Self.path(policy, "spec", "podSelector", "matchLabels") as? [String: String])
        #expect(Set(Self.path(policy, "spec", "policyTypes") as? [String] ?? []) == ["Ingress", "Egress"])
        #expect((Self.path(policy, "spec", "ingress") as? [Any])?.isEmpty == true, "nothing connects to clawback")
        // Every pod template of every manifest carries the selected labels: a new Job without them would run outside the policy.
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.jobs.appendingPathComponent("kubernetes").path).filter {
            $0.hasSuffix(".yaml")
        }
        var templates = 0
        for file in files.sorted() {
            let manifest = try Self.yaml("kubernetes/\(file)")
            let template = Self.path(manifest, "spec", "jobTemplate", "spec", "template") ?? Self.path(manifest, "spec", "template")
            guard let template else { continue }
            templates += 1
            let labels = Self.path(template, "metadata", "labels") as? [String: String] ?? [:]
            #expect(selector.allSatisfy { labels[$0.key] == $0.value }, "\(file): its pods are not selected by the egress policy")
        }
        #expect(templates >= 10)
        let rules = try #require(Self.path(policy, "spec", "egress") as? [[String: Any]])
        let ports = rules.map { rule in Set((rule["ports"] as? [[String: Any]] ?? []).compactMap { $0["port"] as? Int }) }
        #expect(ports == [[53], [5432], [9091], [443]])
        // The Pushgateway is a namespace's pods, not an address range.
        let pushgateway = try #require((rules[2]["to"] as? [[String: Any]])?.first)
        #expect(Self.path(pushgateway, "namespaceSelector") != nil && Self.path(pushgateway, "podSelector") != nil)
        let internet = try #require((rules.last?["to"] as? [[String: Any]])?.first)
        #expect(Self.path(internet, "ipBlock", "cidr") as? String == "0.0.0.0/0")
        let excepted = Set(Self.path(internet, "ipBlock", "except") as? [String] ?? [])
        #expect(
            excepted.isSuperset(of: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]), "no private range, no metadata service")
    }
}
