import Foundation
import Synchronization

/// Named places where the fault suite kills the process on purpose, to prove that a crash exactly there
/// loses nothing and writes nothing twice. Random kills rarely land inside a commit or between two report
/// renames; these make such moments repeatable.
///
/// Armed only by `CLAWBACK_CRASH_AT=<point>[:<n>]` in the environment: the n-th time (default 1st) the
/// process reaches `<point>`, it sends itself SIGKILL, which nothing can catch or clean up after, like a
/// power cut or the OOM killer. Unarmed, reaching a point costs one comparison.
///
/// Only debug builds (the ones the test suite runs) carry the points: `CLAWBACK_CRASH_POINTS` is defined for
/// the debug configuration alone (Package.swift), so a release binary has no code that reads the variable
/// or kills itself, and an operator's stray environment cannot arm one.
public enum CrashPoint {
    /// The points, so that a misspelt name in a test fails instead of silently never firing.
    public static let all: Set<String> = [
        "batch.before-commit", "batch.after-commit", "run.after-finish", "reports.before-rename", "reports.between-renames",
        "reports.after-rename", "prune.after-detach", "prune.after-drop", "run.before-finalize", "refund-requests.after-record",
        "refund-requests.before-send", "refund-requests.after-send", "google-notifications.before-send", "google-notifications.after-send",
        "stripe-disputes.after-store", "stripe-disputes.before-submit", "stripe-disputes.after-submit",
    ]

    #if CLAWBACK_CRASH_POINTS
        struct Armed: Sendable {
            var point: String
            var hit: Int
        }

        static let armed: Armed? = parse(ProcessInfo.processInfo.environment["CLAWBACK_CRASH_AT"])
        static let hits = Atomic<Int>(0)

        static func parse(_ text: String?) -> Armed? {
            guard let text, !text.isEmpty else { return nil }
            let parts = text.split(separator: ":", maxSplits: 1)
            let point = String(parts[0])
            let hit = parts.count == 2 ? Int(parts[1]) ?? 1 : 1
            guard all.contains(point), hit >= 1 else {
                // A fault test that names no real point must not pass because nothing happened.
                FileHandle.standardError.write(
                    Data("clawback: CLAWBACK_CRASH_AT=\(text) names no crash point (\(all.sorted().joined(separator: ", ")))\n".utf8))
                exit(70)
            }
            return Armed(point: point, hit: hit)
        }
    #endif

    /// Refuses (exit 70) a `CLAWBACK_CRASH_AT` that names no point, at start-up rather than never.
    public static func checkEnvironment() {
        #if CLAWBACK_CRASH_POINTS
            _ = armed
        #endif
    }

    /// Called at the point named `name`; kills the process when the environment asked for it here.
    @inline(__always)
    public static func reached(_ name: StaticString) {
        #if CLAWBACK_CRASH_POINTS
            guard let armed else { return }
            guard armed.point == name.description else { return }
            if hits.add(1, ordering: .sequentiallyConsistent).newValue == armed.hit {
                kill(getpid(), SIGKILL)
            }
        #endif
    }
}
