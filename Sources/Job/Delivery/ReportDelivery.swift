import Crypto
import Foundation
import HTTP
public import Logging

/// Delivers the report files a run or `clawback report` wrote to the configured S3-compatible bucket,
/// exactly the bytes on disk: each PUT carries the body's MD5 (`Content-MD5`, which S3 checks, refusing a
/// body that changed on the way) and SHA-256 (`x-amz-content-sha256`, signed), and the ETag S3 answers is
/// compared with the MD5 again. A failed upload is retried; when it still fails the local files stay where
/// they are and the failure is reported (exit 73): `clawback report` delivers them again.
public struct ReportDelivery: Sendable {
    /// What could not be delivered, and why.
    public struct Failure: ExitStatusCarrying {
        public let destination: String
        public let failures: [(file: String, reason: String)]

        public var exitStatus: ExitStatus { .cannotCreateOutput }
        public var description: String {
            "\(failures.count) report file(s) could not be delivered to \(destination) (they stay on disk): "
                + failures.map { "\(URL(fileURLWithPath: $0.file).lastPathComponent): \($0.reason)" }.joined(separator: "; ")
                + "; `clawback report` writes and delivers them again"
        }
    }

    let target: ClawbackConfiguration.S3Delivery
    /// The keys read when the job started (which proves the file readable before any work); `deliver` reads
    /// the file again, since temporary credentials expire within hours and their agent rewrites the file.
    let credentials: S3Credentials
    let logger: Logger
    /// Waits before the second, third and fourth attempts.
    var backoff: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2)]

    /// The delivery the configuration asks for, its credentials read; nil when none is configured.
    public static func configured(_ configuration: ClawbackConfiguration, logger: Logger) throws(ConfigurationErrors) -> ReportDelivery? {
        guard let target = configuration.reports.s3 else { return nil }
        return ReportDelivery(target: target, credentials: try readCredentials(target.credentialsFile, profile: target.profile), logger: logger)
    }

    /// `s3://bucket/prefix`, for messages.
    public var destination: String { "s3://\(target.bucket)/\(target.prefix)" }

    /// Uploads every file; throws a `Failure` naming those that could not be delivered after the retries.
    public func deliver(_ files: [String]) async throws(Failure) {
        let http: HTTPClient
        do {
            http = try HTTPClients.start(for: "the report bucket", timeout: .seconds(120), http1Only: true)
        } catch {
            throw Failure(destination: destination, failures: files.map { ($0, "\(error)") })
        }
        defer { http.shutdown() }
        var credentials = self.credentials
        do {
            credentials = try Self.readCredentials(target.credentialsFile, profile: target.profile)
        } catch {
            logger.warning("cannot read the S3 credentials again; delivering with those read at start", metadata: ["error": "\(error)"])
        }
        var failures: [(file: String, reason: String)] = []
        for file in files {
            // A bucket that stayed unreachable through one file's retries is not asked again for the rest.
            if let unreachable = failures.last, unreachable.reason.hasPrefix(Self.transportFailure) {
                failures.append((file, "not attempted: \(unreachable.reason)"))
                continue
            }
            if let reason = await upload(file, credentials: credentials, http: http) {
                failures.append((file, reason))
            } else {
                logger.info("report delivered", metadata: ["report.file": "\(file)", "report.destination": "\(url(for: file))"])
            }
        }
        guard failures.isEmpty else { throw Failure(destination: destination, failures: failures) }
    }

    /// nil when delivered, else why not (after the retries a transient failure deserves).
    func upload(_ file: String, credentials: S3Credentials, http: HTTPClient) async -> String? {
        guard let data = FileManager.default.contents(atPath: file) else { return "cannot read \(file)" }
        let body = [UInt8](data)
        let md5 = Insecure.MD5.hash(data: body)
        let md5Hex = md5.map { String(format: "%02x", $0) }.joined()
        let sha256 = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        var headers: HTTPHeaders = [
            "Content-Type": Self.contentType(of: file), "Content-MD5": Data(md5).base64EncodedString(), "x-amz-content-sha256": sha256,
        ]
        // Temporary credentials' token is sent, and signed, with every request.
        if let token = credentials.sessionToken { headers.add(name: "x-amz-security-token", value: token) }
        var request = HTTPRequest(method: .put, url: url(for: file), headers: headers, body: body)
        request.awsSignature = AWSSignature(
            region: target.region, service: "s3", accessKeyID: credentials.accessKeyID, secretAccessKey: credentials.secretAccessKey)
        var reason = ""
        for attempt in 0...backoff.count {
            if attempt > 0 {
                logger.warning("report delivery failed; trying again", metadata: ["report.file": "\(file)", "error": "\(reason)"])
                try? await Task.sleep(for: backoff[attempt - 1])
            }
            do {
                let response = try await http.send(request)
                if (200..<300).contains(response.status) {
                    if let etag = Self.etagOfOtherBytes(response.headers, md5Hex: md5Hex) {
                        return "the bucket stored other bytes (ETag \(etag), MD5 \(md5Hex))"
                    }
                    return nil
                }
                reason = "HTTP \(response.status): " + Self.errorSummary(response.body)
                // 4xx other than 429 (and S3's 400 RequestTimeout) will not change on a retry.
                guard response.status >= 500 || response.status == 429 || reason.contains("RequestTimeout") else { return reason }
            } catch {
                reason = "\(Self.transportFailure)\(error)"
            }
        }
        return reason
    }

    /// The ETag of a stored object that is not the MD5 of the bytes sent, when the ETag says so; nil when it
    /// matches or says nothing. A single PUT's ETag is the MD5 of the stored bytes only without SSE-KMS or
    /// SSE-C: under those, S3 answers another value (and has already checked the body against
    /// `Content-MD5`, refusing a body that changed on the way), so the ETag is not compared.
    static func etagOfOtherBytes(_ headers: HTTPHeaders, md5Hex: String) -> String? {
        if headers["x-amz-server-side-encryption"]?.lowercased().hasPrefix("aws:kms") == true { return nil }
        if headers["x-amz-server-side-encryption-customer-algorithm"] != nil { return nil }
        let etag = headers["ETag"]?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) ?? ""
        guard etag.count == 32, etag.allSatisfy(\.isHexDigit), etag.lowercased() != md5Hex else { return nil }
        return etag
    }

    /// How a failure to reach the bucket at all begins.
    static let transportFailure = "unreachable: "

    func url(for file: String) -> String {
        let key =
            (target.prefix + URL(fileURLWithPath: file).lastPathComponent)
            .addingPercentEncoding(withAllowedCharacters: Self.keyCharacters) ?? ""
        let endpoint = target.endpoint.hasSuffix("/") ? String(target.endpoint.dropLast()) : target.endpoint
        if target.virtualHostedStyle, let scheme = endpoint.range(of: "://") {
            return endpoint[..<scheme.upperBound] + target.bucket + "." + endpoint[scheme.upperBound...] + "/" + key
        }
        return "\(endpoint)/\(target.bucket)/\(key)"
    }

    /// Unreserved characters and `/` stay as they are in an object key's path (SigV4's canonical URI).
    static let keyCharacters = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")

    static func contentType(of file: String) -> String {
        switch URL(fileURLWithPath: file).pathExtension.lowercased() {
        case "csv": "text/csv; charset=utf-8"
        case "html": "text/html; charset=utf-8"
        case "pdf": "application/pdf"
        case "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        default: "application/octet-stream"
        }
    }

    /// S3's `<Code>` and `<Message>`, or the start of whatever else answered.
    static func errorSummary(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(2000), as: UTF8.self)
        func element(_ name: String) -> String? {
            guard let start = text.range(of: "<\(name)>"), let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex) else {
                return nil
            }
            return String(text[start.upperBound..<end.lowerBound])
        }
        if let code = element("Code") { return code + (element("Message").map { ": \($0)" } ?? "") }
        return String(text.prefix(200)).replacingOccurrences(of: "\n", with: " ")
    }

    /// The profile's credentials from the file, refusing a file others may read.
    static func readCredentials(_ path: String, profile: String) throws(ConfigurationErrors) -> S3Credentials {
        let field = "reports.delivery.s3.credentials_file"
        let text = try SecretFile.text(path, field: field)
        do {
            return try S3Credentials.read(text, profile: profile)
        } catch {
            throw ConfigurationErrors(errors: [ConfigurationError(field: field, problem: "\(path) \(error.problem)")])
        }
    }
}
