internal import CCurl

/// One request in flight: the easy handle's options and everything libcurl keeps a pointer to.
///
/// Created by the caller, then owned by the loop thread alone (handed over under the client's lock), so its
/// mutable state is never touched by two threads at once; that is why it may be `@unchecked Sendable`.
final class CurlTransfer: @unchecked Sendable {
    let id: UInt64
    let request: HTTPRequest
    let maxResponseBytes: Int
    private var continuation: CheckedContinuation<HTTPResponse, any Error>?

    // Owned for as long as libcurl may use them: until the handle is reset or cleaned up.
    /// CURLOPT_ERRORBUFFER: libcurl writes its detailed message here.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// CURLOPT_HTTPHEADER: libcurl does not copy the list.
    private var headerList: UnsafeMutablePointer<curl_slist>?

    // Written by the libcurl callbacks, on the loop thread.
    var body: [UInt8] = []
    var headers = HTTPHeaders()
    var exceededLimit = false

    init(id: UInt64, request: HTTPRequest, maxResponseBytes: Int, continuation: CheckedContinuation<HTTPResponse, any Error>) {
        self.id = id
        self.request = request
        self.maxResponseBytes = maxResponseBytes
        self.continuation = continuation
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// Sets every option of this request on a reset easy handle. Returns the first failing option's code.
    func configure(_ handle: UnsafeMutableRawPointer, _ configuration: HTTPClientConfiguration) -> CURLcode {
        var result = CURLE_OK
        func set(_ code: CURLcode) { if result == CURLE_OK { result = code } }
        let context = Unmanaged.passUnretained(self).toOpaque()

        set(clawback_curl_easy_setopt_string(handle, CURLOPT_URL, request.url))
        set(clawback_curl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(clawback_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(clawback_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        set(clawback_curl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteBody))
        set(clawback_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context))
        set(clawback_curl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, curlWriteHeader))
        set(clawback_curl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context))
        set(clawback_curl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, (request.timeout ?? configuration.timeout).curlMilliseconds))
        set(
            clawback_curl_easy_setopt_long(
                handle, CURLOPT_CONNECTTIMEOUT_MS, (request.connectTimeout ?? configuration.connectTimeout).curlMilliseconds))
        set(clawback_curl_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(maxResponseBytes)))
        set(clawback_curl_easy_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1))
        set(clawback_curl_easy_setopt_string(handle, CURLOPT_USERAGENT, configuration.userAgent))
        set(clawback_curl_easy_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, ""))  // whatever libcurl can decode

        // TLS: verification stays on. An extra CA file is added through CAINFO; the system store is still
        // used through CAPATH (OpenSSL consults both), so the simulator's CA adds to trust, never replaces it.
        set(clawback_curl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        set(clawback_curl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if let ca = configuration.extraCABundlePath { set(clawback_curl_easy_setopt_string(handle, CURLOPT_CAINFO, ca)) }

        switch configuration.protocolPreference {
        case .http2OverTLS:
            set(clawback_curl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
            // Wait for an existing connection that may multiplex rather than opening a new one.
            set(clawback_curl_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1))
        case .http1:
            set(clawback_curl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)))
        }

        switch request.method {
        case .get: break
        case .head: set(clawback_curl_easy_setopt_long(handle, CURLOPT_NOBODY, 1))
        case .post, .put, .delete:
            if request.method != .post {
                set(clawback_curl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method.rawValue))
            }
            let body = request.body ?? []
            set(clawback_curl_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS copies POSTFIELDSIZE bytes, so nothing here has to outlive this call. An empty
            // body still passes a real (one-byte) buffer: a NULL pointer would mean "read from stdin".
            var storage = body.isEmpty ? [0] : body
            set(
                storage.withUnsafeMutableBytes { bytes in
                    clawback_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, bytes.baseAddress)
                })
        }

        if let signature = request.awsSignature {
            set(clawback_curl_easy_setopt_string(handle, CURLOPT_AWS_SIGV4, signature.provider))
            set(clawback_curl_easy_setopt_string(handle, CURLOPT_USERNAME, signature.accessKeyID))
            set(clawback_curl_easy_setopt_string(handle, CURLOPT_PASSWORD, signature.secretAccessKey))
        }

        // An empty "Expect:" stops libcurl from waiting for "100 Continue" before sending a body. Not on a
        // signed request: libcurl 7.88's SigV4 signer signs the empty header that is then never sent, and the
        // server refuses the signature (S3 answers 100 Continue anyway).
        let expect: [(name: String, value: String)] = request.awsSignature == nil ? [(name: "Expect", value: "")] : []
        for field in request.headers.fields + expect {
            let line = field.value.isEmpty ? "\(field.name):" : "\(field.name): \(field.value)"
            headerList = curl_slist_append(headerList, line)
        }
        set(clawback_curl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
        return result
    }

    /// libcurl's own text for a code plus the detail from the error buffer, if it adds anything.
    func message(for code: CURLcode) -> String {
        let summary = String(cString: curl_easy_strerror(code))
        let detail = String(cString: errorBuffer)
        return detail.isEmpty || detail == summary ? summary : "\(summary): \(detail)"
    }

    /// Resumes the caller exactly once.
    func resumeCaller(_ result: Result<HTTPResponse, any Error>) {
        continuation?.resume(with: result)
        continuation = nil
    }
}

/// CURLOPT_WRITEFUNCTION: appends body bytes, or stops the transfer once the cap would be exceeded
/// (returning a short count makes libcurl fail the transfer with CURLE_WRITE_ERROR).
private let curlWriteBody: curl_write_callback = { pointer, size, count, context in
    let length = size * count
    guard let pointer, let context else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    guard transfer.body.count + length <= transfer.maxResponseBytes else {
        transfer.exceededLimit = true
        return 0
    }
    pointer.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        transfer.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: length))
    }
    return length
}

/// CURLOPT_HEADERFUNCTION: called once per header line, status lines included. A new status line (after
/// "100 Continue" or similar) starts a fresh header set.
private let curlWriteHeader: curl_write_callback = { pointer, size, count, context in
    let length = size * count
    guard let pointer, let context else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    pointer.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        HeaderLine(UnsafeBufferPointer(start: bytes, count: length)).apply(to: &transfer.headers)
    }
    return length
}

/// One header line as libcurl hands it over, read on its bytes: every response carries several, and
/// Character-level trimming of each was a few percent of a busy run's CPU.
struct HeaderLine {
    let bytes: UnsafeBufferPointer<UInt8>

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// A status line resets the fields; a "name: value" line adds one (name and value trimmed of spaces,
    /// tabs and the line's end); anything else (the blank line closing the header) adds nothing.
    func apply(to headers: inout HTTPHeaders) {
        if bytes.starts(with: "HTTP/".utf8) {
            headers = HTTPHeaders()
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            let name = Self.trimmed(bytes[..<colon])
            let value = Self.trimmed(bytes[(colon + 1)...])
            if !name.isEmpty { headers.add(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)) }
        }
    }

    private static func trimmed(_ slice: Slice<UnsafeBufferPointer<UInt8>>) -> Slice<UnsafeBufferPointer<UInt8>> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var slice = slice
        while let first = slice.first, isSpace(first) { slice = slice.dropFirst() }
        while let last = slice.last, isSpace(last) { slice = slice.dropLast() }
        return slice
    }
}
