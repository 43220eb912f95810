import Dispatch
import Foundation
import Locking
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// SIGTERM / SIGINT handling: the first signal asks the run to stop at the next batch boundary (nothing
/// half-written, the run resumable); a second one exits at once, which is also safe, since every batch is
/// one transaction.
public final class StopSignal: Sendable {
    private let requested = Atomic<Bool>(false)
    /// Whether a signal has arrived: only a second signal exits at once, not a first one after a stop the
    /// job asked for itself (a lost lock).
    private let signalled = Atomic<Bool>(false)
    /// Keeps the signal sources alive. A source is only configured before `resume()` and then left alone,
    /// so holding it from any thread is safe.
    private struct Source: @unchecked Sendable { let source: any DispatchSourceSignal }
    private let sources = Locked<[Source]>([])

    public init() {}

    public var isRequested: Bool { requested.load(ordering: .relaxed) }

    public func request() { requested.store(true, ordering: .relaxed) }

    /// Routes SIGTERM and SIGINT here instead of their default (immediate death).
    public func install(onFirst: @escaping @Sendable (Int32) -> Void = { _ in }) {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                requested.store(true, ordering: .relaxed)
                if signalled.exchange(true, ordering: .relaxed) {
                    ExitStatus.temporaryFailure.exitProcess()  // second signal: leave now; committed batches are whole
                }
                onFirst(number)
            }
            source.resume()
            let held = Source(source: source)
            sources.withLock { $0.append(held) }
        }
    }
}
