internal import CCurl

/// `curl_global_init` is not thread-safe and must run once before any other libcurl call. A global `let`
/// is initialised exactly once, atomically, on first use (swift_once), before any client touches libcurl.
let curlGlobalInitResult: Int = Int(curl_global_init(Int(CURL_GLOBAL_ALL)).rawValue)

/// What this machine's libcurl can do.
public struct CurlCapabilities: Sendable {
    public let version: String
    public let sslVersion: String
    public let supportsHTTP2: Bool
    public let threadSafe: Bool

    public static let current: CurlCapabilities = {
        _ = curlGlobalInitResult
        guard let info = clawback_curl_version_info()?.pointee else {
            return CurlCapabilities(version: "unknown", sslVersion: "unknown", supportsHTTP2: false, threadSafe: false)
        }
        let features = Int32(info.features)
        return CurlCapabilities(
            version: info.version.map { String(cString: $0) } ?? "unknown",
            sslVersion: info.ssl_version.map { String(cString: $0) } ?? "none",
            supportsHTTP2: features & CURL_VERSION_HTTP2 != 0,
            threadSafe: features & CURL_VERSION_THREADSAFE != 0)
    }()
}
