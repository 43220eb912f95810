import Foundation
import TestSupport
import Testing

@testable import HTTP

@Suite("HTTP client over libcurl")
struct HTTPClientTests {
    @Test("GET answers the body, status and headers; a 429 is a response, not an error")
    func getAndHeaders() async throws {
        let client = try HTTPClient()
        defer { client.shutdown() }
        let base = try TestHTTPServer.plainURL()
        let hello = try await client.send(HTTPRequest(url: base + "/hello"))
        #expect(hello.status == 200)
        #expect(String(decoding: hello.body, as: UTF8.self) == "hello\n")
        #expect(hello.version == .http1_1)
        #expect(hello.headers["content-type"] == "text/plain")

        let limited = try await client.send(HTTPRequest(url: base + "/retry-after"))
        #expect(limited.status == 429)
        #expect(limited.headers["Retry-After"] == "7")
        #expect(String(decoding: limited.body, as: UTF8.self) == #"{"errorCode":4290000}"#)
    }

    @Test("POST sends its body and headers")
    func post() async throws {
        let client = try HTTPClient()
        defer { client.shutdown() }
        let body = Array(#"{"startDate":1}"#.utf8)
        let response = try await client.send(
            HTTPRequest(
                method: .post, url: try TestHTTPServer.plainURL() + "/echo",
                headers: ["Content-Type": "application/json", "X-Clawback-Test": "yes"], body: body))
        #expect(String(decoding: response.body, as: UTF8.self) == "POST \(body.count) yes")
        let empty = try await client.send(HTTPRequest(method: .post, url: try TestHTTPServer.plainURL() + "/echo"))
        #expect(String(decoding: empty.body, as: UTF8.self) == "POST 0 ")
    }

    @Test("200 concurrent requests over HTTP/1.1 keep-alive all complete and reuse connections")
    func concurrentHTTP1() async throws {
        let client = try HTTPClient(configuration: .init(protocolPreference: .http1, maxConnectionsPerHost: 16))
        defer { client.shutdown() }
        let url = try TestHTTPServer.plainURL() + "/hello"
        let responses = try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
            for _ in 0..<200 { group.addTask { try await client.send(HTTPRequest(url: url)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 200)
        #expect(responses.allSatisfy { $0.status == 200 && $0.body == Array("hello\n".utf8) })
        // At most 16 connections to the host, so at least 184 requests rode on a kept-alive one.
        #expect(responses.map(\.newConnections).reduce(0, +) <= 16)
    }

    @Test("over HTTP/1.1 each transfer in flight has its own connection by default: none waits inside libcurl for one")
    func connectionPerTransfer() async throws {
        let listener = try SilentListener()
        let client = try HTTPClient(
            configuration: .init(
                timeout: .seconds(900), connectTimeout: .seconds(900), protocolPreference: .http1, maxConcurrentRequests: 80))
        defer { client.shutdown() }
        let url = "http://127.0.0.1:\(listener.port)/"
        let requests = (0..<80).map { _ in Task { try await client.send(HTTPRequest(url: url)) } }
        // 80, more than the 64 connections per host the client used to allow whatever its transfers. A client
        // that caps them never gets there; the patience only has to outlast the suite's load on two cores.
        #expect(try await listener.holdConnections(expecting: 80, patience: .seconds(240)) == 80)
        client.shutdown()
        for request in requests { _ = await request.result }
    }

    @Test("over TLS, nginx offers h2 by ALPN: 200 concurrent requests multiplex over very few connections")
    func concurrentHTTP2() async throws {
        let client = try HTTPClient(configuration: .init(extraCABundlePath: try TestHTTPServer.caFile()))
        defer { client.shutdown() }
        let url = try TestHTTPServer.tlsURL() + "/hello"
        // One request first, so the connection exists and the rest wait for it (PIPEWAIT) and multiplex.
        let first = try await client.send(HTTPRequest(url: url))
        #expect(first.version == .http2)
        let responses = try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
            for _ in 0..<200 { group.addTask { try await client.send(HTTPRequest(url: url)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 200)
        #expect(responses.allSatisfy { $0.status == 200 && $0.version == .http2 })
        #expect(responses.map(\.newConnections).reduce(0, +) <= 2)
    }

    @Test("TLS with the extra CA succeeds; without it, or against a certificate the CA did not sign, it is refused")
    func tlsTrust() async throws {
        let trusting = try HTTPClient(configuration: .init(extraCABundlePath: try TestHTTPServer.caFile()))
        let systemOnly = try HTTPClient()
        defer {
            trusting.shutdown()
            systemOnly.shutdown()
        }
        #expect(try await trusting.send(HTTPRequest(url: try TestHTTPServer.tlsURL() + "/hello")).status == 200)

        let unknownCA = await #expect(throws: HTTPError.self) {
            try await systemOnly.send(HTTPRequest(url: try TestHTTPServer.tlsURL() + "/hello"))
        }
        #expect(unknownCA?.code == .tls)
        let wrongCertificate = await #expect(throws: HTTPError.self) {
            try await trusting.send(HTTPRequest(url: try TestHTTPServer.wrongCertificateURL() + "/hello"))
        }
        #expect(wrongCertificate?.code == .tls)
        #expect(wrongCertificate?.isTransient == false)
    }

    @Test("a server that never answers hits the request timeout")
    func timeoutOnSilence() async throws {
        let listener = try SilentListener()
        let client = try HTTPClient(configuration: .init(timeout: .milliseconds(400)))
        defer { client.shutdown() }
        let error = await #expect(throws: HTTPError.self) {
            try await client.send(HTTPRequest(url: "http://127.0.0.1:\(listener.port)/inApps/v1/transactions/1"))
        }
        #expect(error?.code == .timedOut)
        #expect(error?.isTransient == true)  // a silent server without the timeout would never end the request
    }

    @Test("a slow body hits the per-request timeout")
    func timeoutOnSlowBody() async throws {
        let client = try HTTPClient()
        defer { client.shutdown() }
        let error = await #expect(throws: HTTPError.self) {
            try await client.send(HTTPRequest(url: try TestHTTPServer.plainURL() + "/slow", timeout: .milliseconds(500)))
        }
        #expect(error?.code == .timedOut)
    }

    @Test("a body over the cap is cut with a typed error, whether or not its length was announced")
    func oversizedBody() async throws {
        let client = try HTTPClient(configuration: .init(maxResponseBytes: 1 << 20))
        defer { client.shutdown() }
        let error = await #expect(throws: HTTPError.self) {
            try await client.send(HTTPRequest(url: try TestHTTPServer.plainURL() + "/big"))
        }
        #expect(error?.code == .responseTooLarge)
        // /slow has a Content-Length of 512 KiB too, so use a compressed-free chunk: cap below the small file.
        let tiny = try HTTPClient(configuration: .init(maxResponseBytes: 3))
        defer { tiny.shutdown() }
        let cut = await #expect(throws: HTTPError.self) {
            try await tiny.send(HTTPRequest(url: try TestHTTPServer.plainURL() + "/hello"))
        }
        #expect(cut?.code == .responseTooLarge)
    }

    @Test("a refused connection is couldNotConnect; a malformed URL is invalidRequest")
    func connectionFailures() async throws {
        let client = try HTTPClient()
        defer { client.shutdown() }
        let port = try SilentListener.closedPort()
        let refused = await #expect(throws: HTTPError.self) {
            try await client.send(HTTPRequest(url: "http://127.0.0.1:\(port)/"))
        }
        #expect(refused?.code == .couldNotConnect)
        let malformed = await #expect(throws: HTTPError.self) {
            try await client.send(HTTPRequest(url: "ftp://example.invalid/file"))
        }
        #expect(malformed?.code == .invalidRequest)
    }

    @Test("cancelling the calling task ends the request at once")
    func cancellation() async throws {
        let listener = try SilentListener()
        let client = try HTTPClient(configuration: .init(timeout: .seconds(60)))
        defer { client.shutdown() }
        let task = Task { try await client.send(HTTPRequest(url: "http://127.0.0.1:\(listener.port)/")) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let result = await task.result  // .cancelled, not the 60 s timeout's .timedOut
        #expect(throws: HTTPError.self) { try result.get() }
        if case .failure(let error as HTTPError) = result { #expect(error.code == .cancelled) }
    }

    @Test("while many transfers are in flight (the loop naps between rounds), new requests and a cancellation still take effect")
    func busyLoop() async throws {
        let listener = try SilentListener()
        // Timeouts far beyond the test: under the whole suite's load on two cores, it may take a minute or more.
        let client = try HTTPClient(configuration: .init(timeout: .seconds(600), connectTimeout: .seconds(600), protocolPreference: .http1))
        defer { client.shutdown() }
        // 32 requests the listener never answers keep the loop busy for the whole test.
        let silentURL = "http://127.0.0.1:\(listener.port)/"
        let silent = (0..<32).map { _ in Task { try await client.send(HTTPRequest(url: silentURL)) } }
        try await Task.sleep(for: .milliseconds(200))
        // Each request is submitted after the one before it ended: at once, while the loop naps after that
        // answer (it must look at the inbox itself), or 5 ms later, when it sleeps in epoll_wait again (it must
        // be woken). A submission nobody woke the loop for would still be served, after the loop's idle
        // timeout; the loop counts each time it slept on such work.
        let url = try TestHTTPServer.plainURL() + "/hello"
        for index in 0..<50 {
            if index.isMultiple(of: 2) { try await Task.sleep(for: .milliseconds(5)) }
            let response = try await client.send(HTTPRequest(url: url))
            #expect(response.status == 200)
        }
        silent[0].cancel()
        if case .failure(let error as HTTPError) = await silent[0].result {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("the cancelled request did not fail with .cancelled")
        }
        #expect(client.lostWakeUps == 0)
        client.shutdown()
        for task in silent.dropFirst() {
            guard case .failure(let error as HTTPError) = await task.result, error.code == .shutdown else {
                Issue.record("a silent request did not end with .shutdown")
                continue
            }
        }
    }

    @Test("shutting down fails requests in flight, and later ones, with .shutdown")
    func shutdown() async throws {
        let listener = try SilentListener()
        let client = try HTTPClient(configuration: .init(timeout: .seconds(60)))
        let task = Task { try await client.send(HTTPRequest(url: "http://127.0.0.1:\(listener.port)/")) }
        try await Task.sleep(for: .milliseconds(200))
        client.shutdown()
        if case .failure(let error as HTTPError) = await task.result {
            #expect(error.code == .shutdown)
        } else {
            Issue.record("the in-flight request did not fail with .shutdown")
        }
        let late = await #expect(throws: HTTPError.self) { try await client.send(HTTPRequest(url: "http://127.0.0.1:1/")) }
        #expect(late?.code == .shutdown)
    }

    @Test("errors never show the query string or credentials of the URL")
    func redaction() {
        let error = HTTPError(.transport, message: "x", url: "https://user:secret@api.example.com:443/path?token=abc#frag")
        #expect(error.url == "https://api.example.com:443/path")
        #expect(!error.description.contains("secret"))
        #expect(!error.description.contains("token"))
    }

    @Test("the machine's libcurl speaks HTTP/2 and is thread-safe")
    func capabilities() {
        #expect(CurlCapabilities.current.supportsHTTP2)
        #expect(CurlCapabilities.current.threadSafe)
    }
}
