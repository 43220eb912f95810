import Foundation

/// A value behind a pthread mutex (Foundation's `NSLock`): the state clawback's threads and tasks share (the
/// HTTP loop's inbox, a client's counters and caches, a gateway's bookkeeping, the simulator's world).
///
/// Swift's `Synchronization.Mutex` would serve as well, but on Linux ThreadSanitizer does not see its
/// hand-over (a futex, behind code the sanitizer did not instrument) and reports every access as a race, so
/// a thread-sanitized test run (Jobs/local/test.sh) could find nothing real. A pthread mutex it understands.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the lock: nothing else reads or writes it meanwhile.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
