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
    let signature: AWSSignature
    let logger: Logger
    /// Waits before the second, third and fourth attempts.
    var backoff: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2)]

    /// The delivery the configuration asks for, its credentials read; nil when none is configured.
    public static func configured(_ configuration: ClawbackConfiguration, logger: Logger) throws(ConfigurationErrors) -> ReportDelivery? {
        guard let target = configuration.reports.s3 else { return nil }
        let (accessKeyID, secret) = try readCredentials(target.credentialsFile)
        return ReportDelivery(
            target: target, signature: AWSSignature(region: target.region, service: "s3", accessKeyID: accessKeyID, secretAccessKey: secret),
            logger: logger)
    }

    /// `s3://bucket/prefix`, for messages.
    public var destination: String { "s3://\(target.bucket)/\(target.prefix)" }

    /// Uploads every file; throws a `Failure` naming those that could not be delivered after the retries.
    public func deliver(_ files: [String]) async throws(Failure) {
        let http: HTTPClient
        do {
            http = try HTTPClient(
                configuration: .init(timeout: .seconds(120), protocolPreference: .http1, userAgent: "clawback/\(BuildInfo.version)"))
        } catch {
            throw Failure(destination: destination, failures: files.map { ($0, "cannot start the HTTP client: \(error)") })
        }
        defer { http.shutdown() }
        var failures: [(file: String, reason: String)] = []
        for file in files {
            // A bucket that stayed unreachable through one file's retries is not asked again for the rest.
            if let unreachable = failures.last, unreachable.reason.hasPrefix(Self.transportFailure) {
                failures.append((file, "not attempted: \(unreachable.reason)"))
                continue
            }
            if let reason = await upload(file, http: http) {
                failures.append((file, reason))
            } else {
                logger.info("report delivered", metadata: ["report.file": "\(file)", "report.destination": "\(url(for: file))"])
            }
        }
        guard failures.isEmpty else { throw Failure(destination: destination, failures: failures) }
    }

    /// nil when delivered, else why not (after the retries a transient failure deserves).
    func upload(_ file: String, http: HTTPClient) async -> String? {
        guard let data = FileManager.default.contents(atPath: file) else { return "cannot read \(file)" }
        let body = [UInt8](data)
        let md5 = Insecure.MD5.hash(data: body)
        let md5Hex = md5.map { String(format: "%02x", $0) }.joined()
        let sha256 = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        var request = HTTPRequest(
            method: .put, url: url(for: file),
            headers: [
                "Content-Type": Self.contentType(of: file), "Content-MD5": Data(md5).base64EncodedString(), "x-amz-content-sha256": sha256,
            ],
            body: body)
        request.awsSignature = signature
        var reason = ""
        for attempt in 0...backoff.count {
            if attempt > 0 {
                logger.warning("report delivery failed; trying again", metadata: ["report.file": "\(file)", "error": "\(reason)"])
                try? await Task.sleep(for: backoff[attempt - 1])
            }
            do {
                let response = try await http.send(request)
                if (200..<300).contains(response.status) {
                    // Without SSE-KMS, a single PUT's ETag is the MD5 of the bytes S3 stored.
                    let etag = response.headers["ETag"]?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) ?? ""
                    if etag.count == 32, etag.allSatisfy(\.isHexDigit), etag.lowercased() != md5Hex {
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

    /// The access key and secret from `key = value` lines, refusing a file others may read.
    static func readCredentials(_ path: String) throws(ConfigurationErrors) -> (String, String) {
        let field = "reports.delivery.s3.credentials_file"
        let text = try SecretFile.text(path, field: field)
        var values: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !line.hasPrefix("#") else { continue }
            let key = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            values[key.hasPrefix("aws_") ? String(key.dropFirst(4)) : key] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        guard let access = values["access_key_id"], !access.isEmpty, let secret = values["secret_access_key"], !secret.isEmpty else {
            throw ConfigurationErrors(
                errors: [ConfigurationError(field: field, problem: "\(path) needs access_key_id = … and secret_access_key = … lines")])
        }
        return (access, secret)
    }
}
