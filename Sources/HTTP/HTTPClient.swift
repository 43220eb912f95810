import Synchronization

/// An async HTTP client over libcurl's multi interface: many requests in flight on one thread, HTTP/2
/// multiplexing over TLS when the server offers it, keep-alive otherwise, bounded bodies, typed errors.
///
/// Create one per process (or per configuration) and share it: connections are pooled per client.
/// Call `shutdown()` when done; in-flight requests then fail with `.shutdown`.
public final class HTTPClient: Sendable {
    public let configuration: HTTPClientConfiguration
    private let loop: CurlMultiLoop
    private let nextID = Atomic<UInt64>(1)

    public init(configuration: HTTPClientConfiguration = .init()) throws(HTTPError) {
        self.configuration = configuration
        loop = try CurlMultiLoop(configuration: configuration)
    }

    deinit { loop.shutdown() }

    /// Sends a request and returns its response, whatever the status code. Throws `HTTPError` when there is
    /// no response (timeout, connection, TLS, size cap, cancellation).
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let transfer = CurlTransfer(
                    id: id, request: request, maxResponseBytes: request.maxResponseBytes ?? configuration.maxResponseBytes, continuation: continuation
                )
                if Task.isCancelled {
                    transfer.resumeCaller(.failure(HTTPError(.cancelled, message: "the request was cancelled", url: request.url)))
                } else {
                    loop.submit(transfer)
                }
            }
        } onCancel: {
            loop.cancel(id)
        }
    }

    /// Requests and cancellations the client's thread slept on without being woken for them: 0 unless its
    /// hand-over is broken (tests check it).
    var lostWakeUps: Int { loop.lostWakeUps.load(ordering: .relaxed) }

    /// Stops the client's thread and fails in-flight requests with `.shutdown`. Idempotent.
    public func shutdown() { loop.shutdown() }
}
