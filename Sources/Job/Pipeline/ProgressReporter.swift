import Foundation
import Locking
public import Logging
import Reconciliation
public import Storage

#if canImport(Glibc)
    import Glibc
#endif

/// Shows a run's progress: a redrawn bar on a terminal, a log line every few seconds otherwise.
public final class ProgressReporter: Sendable {
    private let isTerminal: Bool
    private let logger: Logger
    private let interval: Duration
    private let state = Locked<(last: ContinuousClock.Instant, started: ContinuousClock.Instant, drawn: Bool)>(
        (ContinuousClock.now, ContinuousClock.now, false))

    public init(logger: Logger, forceTerminal: Bool? = nil) {
        self.logger = logger
        isTerminal = forceTerminal ?? (isatty(STDERR_FILENO) == 1)
        interval = isTerminal ? .milliseconds(200) : .seconds(5)
    }

    public func update(_ counters: RunCounters, total: Int, alreadyDone: Int, force: Bool = false) {
        let now = ContinuousClock.now
        let due = state.withLock { state -> (Bool, Duration) in
            guard force || now - state.last >= interval else { return (false, .zero) }
            state.last = now
            state.drawn = true
            return (true, now - state.started)
        }
        guard due.0 else { return }
        let elapsed = Double(due.1.components.seconds) + Double(due.1.components.attoseconds) / 1e18
        let done = alreadyDone + counters.checked
        let rate = elapsed > 0 ? Double(counters.checked) / elapsed : 0
        let remaining = max(0, total - done)
        let eta = rate > 0 ? Self.duration(Double(remaining) / rate) : "?"
        let actions = Verdict.allCases.compactMap { verdict in counters.attemptVerdicts[verdict].map { "\(verdict.rawValue) \($0)" } }
            .joined(separator: ", ")
        if isTerminal {
            let width = 30
            let filled = total > 0 ? min(width, done * width / total) : width
            let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
            let line = "\r[\(bar)] \(done)/\(total) \(String(format: "%.0f", rate))/s ETA \(eta)  \(actions)"
            FileHandle.standardError.write(Data((line.count > 160 ? String(line.prefix(160)) : line).utf8) + Data("\u{1B}[K".utf8))
        } else {
            logger.info(
                "progress",
                metadata: [
                    "run.done": "\(done)", "run.total": "\(total)", "run.rate": "\(String(format: "%.1f", rate))", "run.eta": "\(eta)",
                    "run.verdicts": "\(actions)",
                ])
        }
    }

    /// Ends the bar's line, so that what follows starts on a new one.
    public func finish() {
        if isTerminal && state.withLock({ $0.drawn }) { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600 ? "\(total / 3600)h\(total % 3600 / 60)m" : total >= 60 ? "\(total / 60)m\(total % 60)s" : "\(total)s"
    }
}
