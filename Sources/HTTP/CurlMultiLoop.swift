internal import CCurl
import Foundation
import Synchronization

/// The libcurl multi handle and the one thread that drives it.
///
/// libcurl handles are not thread-safe: only this loop's thread touches the multi handle and the easy
/// handles. Callers hand work over through `inbox` (a mutex) and wake the loop with `curl_multi_wakeup`,
/// the one multi call documented as safe from any thread.
final class CurlMultiLoop: @unchecked Sendable {
    private struct Inbox {
        var starts: [CurlTransfer] = []
        var cancels: [UInt64] = []
        var stopping = false
    }

    private let configuration: HTTPClientConfiguration
    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex(Inbox())
    private let finished = DispatchSemaphore(value: 0)

    // Loop thread only.
    private var waiting: [CurlTransfer] = []
    private var waitingHead = 0
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var idleHandles: [UnsafeMutableRawPointer] = []

    init(configuration: HTTPClientConfiguration) throws(HTTPError) {
        guard curlGlobalInitResult == 0 else {
            throw HTTPError(.transport, curlCode: curlGlobalInitResult, message: "curl_global_init failed", url: "")
        }
        guard let multi = curl_multi_init() else {
            throw HTTPError(.transport, message: "curl_multi_init failed (out of memory)", url: "")
        }
        self.multi = multi
        self.configuration = configuration
        _ = clawback_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = clawback_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        _ = clawback_curl_multi_setopt_long(
            multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(100, configuration.maxConcurrentRequests))
        let thread = Thread { [self] in self.run() }
        thread.name = "clawback-http"
        thread.start()
    }

    func submit(_ transfer: CurlTransfer) {
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.stopping else { return false }
            inbox.starts.append(transfer)
            return true
        }
        guard accepted else {
            transfer.finish(.failure(HTTPError(.shutdown, message: "the HTTP client was shut down", url: transfer.request.url)))
            return
        }
        curl_multi_wakeup(multi)
    }

    func cancel(_ id: UInt64) {
        inbox.withLock { $0.cancels.append(id) }
        curl_multi_wakeup(multi)
    }

    /// Fails whatever is in flight with `.shutdown`, stops the thread and frees every handle. Idempotent.
    func shutdown() {
        let first = inbox.withLock { inbox -> Bool in
            defer { inbox.stopping = true }
            return !inbox.stopping
        }
        guard first else { return }
        curl_multi_wakeup(multi)
        finished.wait()
        curl_multi_cleanup(multi)
    }

    private func run() {
        var running: Int32 = 0
        while true {
            let work = inbox.withLock { inbox -> Inbox in
                defer { inbox.starts.removeAll(); inbox.cancels.removeAll() }
                return inbox
            }
            waiting += work.starts
            work.cancels.forEach(cancel(id:))
            if work.stopping {
                for transfer in Array(active.values) + waiting[waitingHead...] {
                    complete(transfer, .failure(HTTPError(.shutdown, message: "the HTTP client was shut down", url: transfer.request.url)))
                }
                waiting.removeAll()
                idleHandles.forEach { curl_easy_cleanup($0) }
                idleHandles.removeAll()
                finished.signal()
                return
            }
            startWaiting()
            _ = curl_multi_perform(multi, &running)
            collectFinished()
            startWaiting()
            // Sleeps until a socket is ready, a timeout of libcurl's is due, or a caller wakes it.
            _ = curl_multi_poll(multi, nil, 0, 1000, nil)
        }
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
        guard let handle = idleHandles.popLast() ?? curl_easy_init() else {
            transfer.finish(.failure(HTTPError(.transport, message: "curl_easy_init failed (out of memory)", url: transfer.request.url)))
            return
        }
        curl_easy_reset(handle)
        let code = transfer.configure(handle, configuration)
        guard code == CURLE_OK else {
            idleHandles.append(handle)
            transfer.finish(.failure(HTTPError(
                .invalidRequest, curlCode: Int(code.rawValue), message: transfer.message(for: code), url: transfer.request.url)))
            return
        }
        active[handle] = transfer
        let added = curl_multi_add_handle(multi, handle)
        if added != CURLM_OK {
            active[handle] = nil
            idleHandles.append(handle)
            let text = String(cString: curl_multi_strerror(added))
            transfer.finish(.failure(HTTPError(.transport, message: "curl_multi_add_handle: \(text)", url: transfer.request.url)))
        }
    }

    private func cancel(id: UInt64) {
        let transfer: CurlTransfer
        if let (handle, found) = active.first(where: { $0.value.id == id }) {
            release(handle)
            transfer = found
        } else if let index = waiting[waitingHead...].firstIndex(where: { $0.id == id }) {
            transfer = waiting.remove(at: index)
        } else {
            return  // already finished
        }
        transfer.finish(.failure(HTTPError(.cancelled, message: "the request was cancelled", url: transfer.request.url)))
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                let transfer = active[handle]
            else { continue }
            let code = clawback_curl_msg_result(message)
            let result = outcome(of: transfer, handle: handle, code: code)
            release(handle)
            transfer.finish(result)
        }
    }

    private func outcome(of transfer: CurlTransfer, handle: UnsafeMutableRawPointer, code: CURLcode)
        -> Result<HTTPResponse, any Error>
    {
        guard code == CURLE_OK else {
            let kind: HTTPError.Code = transfer.exceededLimit ? .responseTooLarge : HTTPError.code(for: code)
            let message = transfer.exceededLimit
                ? "the response body exceeds the limit of \(transfer.maxResponseBytes) bytes" : transfer.message(for: code)
            return .failure(HTTPError(kind, curlCode: Int(code.rawValue), message: message, url: transfer.request.url))
        }
        var status = 0
        var version = 0
        var connects = 0
        _ = clawback_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = clawback_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        _ = clawback_curl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        return .success(HTTPResponse(
            status: status, headers: transfer.headers, body: transfer.body, version: HTTPVersion(curl: version),
            newConnections: connects))
    }

    private func release(_ handle: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(multi, handle)
        active[handle] = nil
        idleHandles.append(handle)
    }

    private func complete(_ transfer: CurlTransfer, _ result: Result<HTTPResponse, any Error>) {
        if let handle = active.first(where: { $0.value === transfer })?.key {
            curl_multi_remove_handle(multi, handle)
            active[handle] = nil
            curl_easy_cleanup(handle)
        }
        transfer.finish(result)
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
