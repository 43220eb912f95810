internal import CCurl
import Foundation
import Locking
import Synchronization

/// The libcurl multi handle and the one thread that drives it, with libcurl's socket API on epoll:
/// libcurl says which sockets to watch and when its next timeout is due, and the loop tells it which
/// sockets are ready, so each wake-up costs what is ready, not every connection (curl_multi_poll and
/// curl_multi_perform walked all 128 of them per response, a quarter of a run's CPU).
///
/// libcurl handles are not thread-safe: only this loop's thread touches the multi handle and the easy
/// handles (shutdown does too, once the thread has ended). Callers hand work over through `inbox` (a
/// mutex) and wake the loop through an eventfd.
final class CurlMultiLoop: @unchecked Sendable {
    private struct Inbox {
        var starts: [CurlTransfer] = []
        var cancels: [UInt64] = []
        var stopping = false
        /// The loop is napping (see `napWhileBusy`) and looks at the inbox when it wakes: no caller needs to
        /// wake it.
        var loopIsNapping = false
        /// A caller wrote the eventfd since the loop last emptied the inbox.
        var signalled = false

        /// Only the caller that puts the first item into an empty inbox wakes the loop, and only if the loop
        /// is not napping: the loop empties the inbox in one go, so later items ride on that wake-up (a
        /// wake-up per request made the loop spin through poll and curl_multi_perform thousands of times a
        /// second).
        var needsWakeUp: Bool { starts.isEmpty && cancels.isEmpty && !loopIsNapping }

        /// Work the loop slept on without being woken for it: it can only have been put here while the loop
        /// waited in epoll_wait (the loop empties the inbox after napping and before waiting), so its caller
        /// should have woken the loop. Never true unless the hand-over above is broken.
        var holdsUnannouncedWork: Bool { !(starts.isEmpty && cancels.isEmpty) && !signalled }

        /// Called before a caller adds its item: whether it must wake the loop, recorded as done if so.
        mutating func claimWakeUp() -> Bool {
            let wake = needsWakeUp
            if wake { signalled = true }
            return wake
        }
    }

    /// While at least this many transfers are in flight, the loop naps `busyNap` after each round instead of
    /// waking for every socket that becomes ready: what became ready meanwhile is handled in one round, and
    /// the callers resumed together. A wake-up per response cost two thread hand-offs (this thread's epoll
    /// and a worker's futex), about a sixth of a busy run's CPU; a response waits at most `busyNap` longer.
    private static let busyThreshold = 16
    private static let busyNap = Duration.milliseconds(1)

    private let configuration: HTTPClientConfiguration
    private let multi: UnsafeMutableRawPointer
    private let epoll: Int32
    private let wakeUp: Int32
    private let inbox = Locked(Inbox())
    private let finished = DispatchSemaphore(value: 0)
    /// Times the loop found work in the inbox that nobody woke it for (see `Inbox.holdsUnannouncedWork`);
    /// such work waits up to the loop's idle timeout. Read by tests: it stays 0.
    let lostWakeUps = Atomic<Int>(0)

    // Loop thread only.
    private var waiting: [CurlTransfer] = []
    private var waitingHead = 0
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var idleHandles: [UnsafeMutableRawPointer] = []
    /// The sockets in the epoll set (libcurl's socket callback adds and removes them).
    private var watched: Set<Int32> = []
    /// When libcurl wants `CURL_SOCKET_TIMEOUT` handled next (its timer callback), if at all.
    private var timerDeadline: ContinuousClock.Instant?

    init(configuration: HTTPClientConfiguration) throws(HTTPError) {
        guard curlGlobalInitResult == 0 else {
            throw HTTPError(.transport, curlCode: curlGlobalInitResult, message: "curl_global_init failed", url: "")
        }
        let epoll = clawback_epoll_create()
        let wakeUp = clawback_eventfd_create()
        guard epoll >= 0, wakeUp >= 0, clawback_epoll_watch(epoll, wakeUp, CURL_POLL_IN, 0) == 0 else {
            let reason = String(cString: strerror(errno))
            if epoll >= 0 { close(epoll) }
            if wakeUp >= 0 { close(wakeUp) }
            throw HTTPError(.transport, message: "cannot create the HTTP event loop's epoll or eventfd: \(reason)", url: "")
        }
        guard let multi = curl_multi_init() else {
            close(epoll)
            close(wakeUp)
            throw HTTPError(.transport, message: "curl_multi_init failed (out of memory)", url: "")
        }
        self.multi = multi
        self.epoll = epoll
        self.wakeUp = wakeUp
        self.configuration = configuration
        // The callbacks get this loop back from their user pointer. Unretained: the multi handle, and with
        // it every callback, ends in `shutdown`, which the owner calls before letting go of the loop.
        let context = Unmanaged.passUnretained(self).toOpaque()
        // Idle connections kept for reuse: libcurl's default is four per easy handle in the multi, which
        // shrinks as transfers finish; when callers submit slowly (a stalled machine), it closed kept-alive
        // connections that the next requests then had to open again.
        let options: [(String, CURLMcode)] = [
            ("CURLMOPT_SOCKETFUNCTION", clawback_curl_multi_setopt_socket_callback(multi, curlSocketCallback)),
            ("CURLMOPT_SOCKETDATA", clawback_curl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)),
            ("CURLMOPT_TIMERFUNCTION", clawback_curl_multi_setopt_timer_callback(multi, curlTimerCallback)),
            ("CURLMOPT_TIMERDATA", clawback_curl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)),
            ("CURLMOPT_PIPELINING", clawback_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))),
            (
                "CURLMOPT_MAX_HOST_CONNECTIONS",
                clawback_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
            ),
            (
                "CURLMOPT_MAXCONNECTS",
                clawback_curl_multi_setopt_long(
                    multi, CURLMOPT_MAXCONNECTS, max(configuration.maxConcurrentRequests, configuration.maxConnectionsPerHost))
            ),
            (
                "CURLMOPT_MAX_CONCURRENT_STREAMS",
                clawback_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(100, configuration.maxConcurrentRequests))
            ),
        ]
        // An option this libcurl refuses would leave the loop without callbacks or limits: refuse to start.
        if let (name, code) = options.first(where: { $0.1 != CURLM_OK }) {
            curl_multi_cleanup(multi)
            close(epoll)
            close(wakeUp)
            throw HTTPError(.transport, message: "libcurl refused \(name): \(String(cString: curl_multi_strerror(code)))", url: "")
        }
        let thread = Thread { [self] in self.run() }
        thread.name = "clawback-http"
        thread.start()
    }

    func submit(_ transfer: CurlTransfer) {
        let outcome = inbox.withLock { inbox -> (accepted: Bool, wake: Bool) in
            guard !inbox.stopping else { return (false, false) }
            let wake = inbox.claimWakeUp()
            inbox.starts.append(transfer)
            return (true, wake)
        }
        guard outcome.accepted else {
            transfer.resumeCaller(.failure(HTTPError(.shutdown, message: "the HTTP client was shut down", url: transfer.request.url)))
            return
        }
        if outcome.wake { clawback_eventfd_signal(wakeUp) }
    }

    func cancel(_ id: UInt64) {
        let wake = inbox.withLock { inbox -> Bool in
            let wake = inbox.claimWakeUp()
            inbox.cancels.append(id)
            return wake
        }
        if wake { clawback_eventfd_signal(wakeUp) }
    }

    /// Fails whatever is in flight with `.shutdown`, stops the thread and frees every handle. Idempotent.
    func shutdown() {
        let first = inbox.withLock { inbox -> Bool in
            defer { inbox.stopping = true }
            return !inbox.stopping
        }
        guard first else { return }
        clawback_eventfd_signal(wakeUp)
        finished.wait()
        curl_multi_cleanup(multi)
        close(epoll)
        close(wakeUp)
    }

    /// libcurl's socket callback: watch `socket` as it asks.
    fileprivate func watch(_ socket: curl_socket_t, _ what: Int32) {
        let error = clawback_epoll_watch(epoll, socket, what, watched.contains(socket) ? 1 : 0)
        if what == CURL_POLL_REMOVE { watched.remove(socket) } else if error == 0 { watched.insert(socket) }
        // Only a programming error or exhausted kernel memory gets here; the transfer then times out.
        assert(error == 0, "epoll_ctl: \(String(cString: strerror(error)))")
    }

    /// libcurl's timer callback: handle CURL_SOCKET_TIMEOUT in `milliseconds` (-1: no timer).
    fileprivate func setTimer(_ milliseconds: Int) {
        timerDeadline = milliseconds < 0 ? nil : .now + .milliseconds(milliseconds)
    }

    private func run() {
        var running: Int32 = 0
        let capacity = 256
        var readySockets = [Int32](repeating: 0, count: capacity)
        var readyMasks = [Int32](repeating: 0, count: capacity)
        while true {
            let work = inbox.withLock { inbox -> Inbox in
                defer {
                    inbox.starts.removeAll()
                    inbox.cancels.removeAll()
                    inbox.loopIsNapping = false
                    inbox.signalled = false
                }
                return inbox
            }
            waiting += work.starts
            work.cancels.forEach(cancel(id:))
            if work.stopping {
                for transfer in Array(active.values) + waiting[waitingHead...] {
                    destroyAtShutdown(transfer, .failure(HTTPError(.shutdown, message: "the HTTP client was shut down", url: transfer.request.url)))
                }
                waiting.removeAll()
                for handle in idleHandles { curl_easy_cleanup(handle) }
                idleHandles.removeAll()
                finished.signal()
                return
            }
            startWaiting()
            // Sleeps until a socket is ready, libcurl's timeout is due, or a caller wakes it.
            let ready = clawback_epoll_wait(epoll, &readySockets, &readyMasks, Int32(capacity), millisecondsUntilTimer())
            if inbox.withLock({ $0.holdsUnannouncedWork }) { lostWakeUps.add(1, ordering: .relaxed) }
            for index in 0..<max(0, Int(ready)) {
                if readySockets[index] == wakeUp {
                    clawback_eventfd_drain(wakeUp)
                } else {
                    _ = curl_multi_socket_action(multi, readySockets[index], readyMasks[index], &running)
                }
            }
            if let deadline = timerDeadline, deadline <= .now {
                // Cleared first: libcurl may set the next timer from inside the call.
                timerDeadline = nil
                _ = curl_multi_socket_action(multi, clawback_curl_socket_timeout, 0, &running)
            }
            collectFinished()
            napWhileBusy()
        }
    }

    /// Naps `busyNap` when enough transfers are in flight that more responses are due within it. Callers'
    /// submissions meanwhile go to the inbox without waking the loop. The next `epoll_wait` then returns
    /// everything that became ready, or blocks as usual if nothing did: the nap never spins.
    private func napWhileBusy() {
        guard active.count >= Self.busyThreshold else { return }
        inbox.withLock { $0.loopIsNapping = true }
        let (seconds, attoseconds) = Self.busyNap.components
        var interval = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&interval, &remaining) != 0 && errno == EINTR { interval = remaining }
    }

    /// How long the loop may sleep: until libcurl's timer (rounded up), at most a second. The second bounds
    /// what a wake-up that never came could cost (a request's timeout may be minutes away); `lostWakeUps`
    /// counts them, and there should be none.
    private func millisecondsUntilTimer() -> Int32 {
        guard let deadline = timerDeadline else { return 1000 }
        let remaining = deadline - .now
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        return Int32(clamping: min(1000, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
    }

    /// Starts queued transfers while fewer than `maxConcurrentRequests` are in flight, oldest first.
    private func startWaiting() {
        while active.count < configuration.maxConcurrentRequests && waitingHead < waiting.count {
            let transfer = waiting[waitingHead]
            waitingHead += 1
            start(transfer)
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }
    }

    private func start(_ transfer: CurlTransfer) {
        // Handles in the pool were reset when retired: no option or memory of an earlier transfer remains.
        guard let handle = idleHandles.popLast() ?? curl_easy_init() else {
            transfer.resumeCaller(.failure(HTTPError(.transport, message: "curl_easy_init failed (out of memory)", url: transfer.request.url)))
            return
        }
        let code = transfer.configure(handle, configuration)
        guard code == CURLE_OK else {
            returnToPool(handle)
            transfer.resumeCaller(
                .failure(
                    HTTPError(
                        .invalidRequest, curlCode: Int(code.rawValue), message: transfer.message(for: code), url: transfer.request.url)))
            return
        }
        active[handle] = transfer
        let added = curl_multi_add_handle(multi, handle)
        if added != CURLM_OK {
            active[handle] = nil
            returnToPool(handle)
            let text = String(cString: curl_multi_strerror(added))
            transfer.resumeCaller(.failure(HTTPError(.transport, message: "curl_multi_add_handle: \(text)", url: transfer.request.url)))
        }
    }

    private func cancel(id: UInt64) {
        let transfer: CurlTransfer
        if let (handle, found) = active.first(where: { $0.value.id == id }) {
            removeAndReturnToPool(handle)
            transfer = found
        } else if let index = waiting[waitingHead...].firstIndex(where: { $0.id == id }) {
            transfer = waiting.remove(at: index)
        } else {
            return  // already finished
        }
        transfer.resumeCaller(.failure(HTTPError(.cancelled, message: "the request was cancelled", url: transfer.request.url)))
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                let transfer = active[handle]
            else { continue }
            let code = clawback_curl_msg_result(message)
            let result = outcome(of: transfer, handle: handle, code: code)
            removeAndReturnToPool(handle)
            transfer.resumeCaller(result)
        }
    }

    private func outcome(of transfer: CurlTransfer, handle: UnsafeMutableRawPointer, code: CURLcode)
        -> Result<HTTPResponse, any Error>
    {
        guard code == CURLE_OK else {
            var kind: HTTPError.Code = transfer.exceededLimit ? .responseTooLarge : HTTPError.code(for: code)
            var message =
                transfer.exceededLimit
                ? "the response body exceeds the limit of \(transfer.maxResponseBytes) bytes" : transfer.message(for: code)
            // libcurl says "timed out" alike for a connection never made (a black-holed address) and for an
            // answer that never came; only the second means the request left. Nothing was sent before the
            // pre-transfer moment (TCP and TLS done), so a timeout before it is a failure to connect.
            var sentAt: curl_off_t = 0
            if code == CURLE_OPERATION_TIMEDOUT, clawback_curl_easy_getinfo_off(handle, CURLINFO_PRETRANSFER_TIME_T, &sentAt) == CURLE_OK,
                sentAt == 0
            {
                kind = .couldNotConnect
                message += " (no connection was made: the request never left)"
            }
            return .failure(HTTPError(kind, curlCode: Int(code.rawValue), message: message, url: transfer.request.url))
        }
        var status = 0
        var version = 0
        var connects = 0
        _ = clawback_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = clawback_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        _ = clawback_curl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        return .success(
            HTTPResponse(
                status: status, headers: transfer.headers, body: transfer.body, version: HTTPVersion(curl: version),
                newConnections: connects))
    }

    private func removeAndReturnToPool(_ handle: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(multi, handle)
        active[handle] = nil
        returnToPool(handle)
    }

    /// The one way a handle goes back to the pool: reset, so it keeps no option pointing at a finished
    /// transfer's memory (URL, headers, body, callbacks' user data) and starts the next one clean.
    private func returnToPool(_ handle: UnsafeMutableRawPointer) {
        curl_easy_reset(handle)
        idleHandles.append(handle)
    }

    /// At shutdown a handle is not pooled but destroyed: the pool itself is being emptied. The other ways a
    /// handle ends are `removeAndReturnToPool` (a transfer done or cancelled) and `returnToPool` (one never
    /// added to the multi handle); a transfer's caller is always resumed by `CurlTransfer.resumeCaller`.
    private func destroyAtShutdown(_ transfer: CurlTransfer, _ result: Result<HTTPResponse, any Error>) {
        if let handle = active.first(where: { $0.value === transfer })?.key {
            curl_multi_remove_handle(multi, handle)
            active[handle] = nil
            curl_easy_cleanup(handle)
        }
        transfer.resumeCaller(result)
    }
}

extension HTTPVersion {
    init(curl value: Int) {
        switch value {
        case Int(CURL_HTTP_VERSION_1_0): self = .http1_0
        case Int(CURL_HTTP_VERSION_1_1): self = .http1_1
        case Int(CURL_HTTP_VERSION_2_0): self = .http2
        case Int(CURL_HTTP_VERSION_3): self = .http3
        default: self = .unknown
        }
    }
}

extension HTTPError {
    /// The one place a CURLcode becomes a kind of failure.
    static func code(for code: CURLcode) -> Code {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT: .couldNotConnect
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
            CURLE_USE_SSL_FAILED:
            .tls
        case CURLE_FILESIZE_EXCEEDED: .responseTooLarge
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_FUNCTION_ARGUMENT: .invalidRequest
        default: .transport
        }
    }
}

/// libcurl's C callbacks; the user pointer is the loop (see `CurlMultiLoop.init`). They run on the
/// loop's thread, inside libcurl calls.
private func curlSocketCallback(
    _ easy: UnsafeMutableRawPointer?, _ socket: curl_socket_t, _ what: Int32, _ loop: UnsafeMutableRawPointer?,
    _ socketData: UnsafeMutableRawPointer?
) -> Int32 {
    guard let loop else { return -1 }
    Unmanaged<CurlMultiLoop>.fromOpaque(loop).takeUnretainedValue().watch(socket, what)
    return 0
}

private func curlTimerCallback(_ multi: UnsafeMutableRawPointer?, _ milliseconds: Int, _ loop: UnsafeMutableRawPointer?) -> Int32 {
    guard let loop else { return -1 }
    Unmanaged<CurlMultiLoop>.fromOpaque(loop).takeUnretainedValue().setTimer(milliseconds)
    return 0
}
