import Foundation
import HTTP
import Logging
import TestSupport
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// What report delivery takes from the operator and from S3: credentials as AWS writes them (profiles,
/// temporary keys with their session token), an ETag that is not an MD5 under KMS, and bucket names that
/// cannot be host names.
@Suite("Report delivery's S3 details")
struct S3DeliveryTests {
    @Test("a credentials file with profiles gives the configured one's keys, never another's; a flat file is one profile")
    func profiles() throws {
        let file = """
            [default]
            aws_access_key_id = AKIADEFAULT
            aws_secret_access_key = default-secret

            [reports]
            aws_access_key_id = ASIAREPORTS
            aws_secret_access_key = reports-secret
            aws_session_token = token-of-reports
            """
        #expect(try S3Credentials.read(file, profile: "default") == S3Credentials(accessKeyID: "AKIADEFAULT", secretAccessKey: "default-secret"))
        #expect(
            try S3Credentials.read(file, profile: "reports")
                == S3Credentials(accessKeyID: "ASIAREPORTS", secretAccessKey: "reports-secret", sessionToken: "token-of-reports"))
        #expect {
            try S3Credentials.read(file, profile: "finance")
        } throws: { error in
            (error as? S3Credentials.Unusable)?.problem == "has no [finance] profile (it has [default], [reports])"
        }
        let flat = "# our own format\naccess_key_id = AKIAFLAT\nsecret_access_key = flat-secret\n"
        #expect(try S3Credentials.read(flat, profile: "anything").accessKeyID == "AKIAFLAT")
        #expect(throws: S3Credentials.Unusable.self) { try S3Credentials.read("[default]\naws_access_key_id = A\n", profile: "default") }
    }

    @Test("an ETag is compared with the body's MD5 only where S3 makes it one: not under SSE-KMS or SSE-C")
    func etagUnderEncryption() {
        let md5 = "0cc175b9c0f1b6a831c399e269772661"
        let other = "\"9e107d9d372bb6826bd81d3542a419d6\""
        #expect(ReportDelivery.etagOfOtherBytes(["ETag": "\"\(md5)\""], md5Hex: md5) == nil)
        #expect(ReportDelivery.etagOfOtherBytes(["ETag": other], md5Hex: md5) == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(ReportDelivery.etagOfOtherBytes(["ETag": other, "x-amz-server-side-encryption": "aws:kms"], md5Hex: md5) == nil)
        #expect(ReportDelivery.etagOfOtherBytes(["ETag": other, "X-Amz-Server-Side-Encryption": "aws:kms:dsse"], md5Hex: md5) == nil)
        #expect(ReportDelivery.etagOfOtherBytes(["ETag": other, "x-amz-server-side-encryption": "AES256"], md5Hex: md5) != nil)
        #expect(ReportDelivery.etagOfOtherBytes(["ETag": other, "x-amz-server-side-encryption-customer-algorithm": "AES256"], md5Hex: md5) == nil)
        #expect(ReportDelivery.etagOfOtherBytes(["ETag": "\"\(md5)-2\""], md5Hex: md5) == nil, "a multipart ETag says nothing of the MD5")
    }

    @Test("virtual-hosted addressing is refused for a bucket that cannot be a host name, naming url_style: path")
    func bucketsThatAreNoHostNames() throws {
        func configuration(bucket: String, style: String) throws(ConfigurationErrors) -> ClawbackConfiguration {
            try ClawbackConfiguration.parseWithStores(
                yaml: """
                    reports:
                      delivery:
                        s3: {endpoint: 'https://s3.eu-west-1.amazonaws.com', region: eu-west-1, bucket: '\(bucket)', credentials_file: /k, url_style: \(style)}
                    """)
        }
        for bucket in ["finance.reports", "Finance", "finance_reports", "ab", "-finance"] {
            #expect {
                try configuration(bucket: bucket, style: "virtual_hosted")
            } throws: { error in
                "\(error)".contains("reports.delivery.s3.url_style") && "\(error)".contains("use url_style: path")
            }
            #expect(try configuration(bucket: bucket, style: "path").reports.s3?.bucket == bucket)
        }
        #expect(try configuration(bucket: "finance-reports-2026", style: "virtual_hosted").reports.s3?.virtualHostedStyle == true)
    }

    @Test("temporary credentials are delivered with their session token; the same key without it is refused")
    func temporaryCredentials() async throws {
        let server = try S3TestServer.start()
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("s3-temporary-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = directory.appendingPathComponent("2026-10-summary.csv").path
        try "section,figure,value\r\n".write(toFile: report, atomically: true, encoding: .utf8)
        func delivery(token: Bool, key: String) throws -> ReportDelivery {
            let credentials = directory.appendingPathComponent("credentials-\(key)").path
            let temporary = server.temporary
            try """
            [default]
            aws_access_key_id = \(temporary.accessKeyID)
            aws_secret_access_key = \(temporary.secretAccessKey)
            \(token ? "aws_session_token = \(temporary.sessionToken)" : "")
            """.write(toFile: credentials, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: credentials)
            var configuration = ClawbackConfiguration()
            configuration.reports.s3 = .init(
                endpoint: server.endpoint, region: "us-east-1", bucket: server.bucket, prefix: "\(key)/", credentialsFile: credentials)
            var delivery = try #require(try ReportDelivery.configured(configuration, logger: Logger(label: "test")))
            delivery.backoff = []
            return delivery
        }
        try await delivery(token: true, key: "with-token").deliver([report])
        await #expect {
            try await delivery(token: false, key: "without-token").deliver([report])
        } throws: { error in
            // moto cannot match the temporary key without its token: the request is refused, never stored.
            (error as? ReportDelivery.Failure)?.failures.first?.reason.hasPrefix("HTTP ") == true
        }
        #expect(try await server.object(key: "with-token/2026-10-summary.csv").status == 200)
        #expect(try await server.object(key: "without-token/2026-10-summary.csv").status == 404)

        // The keys rotate while a run works (an STS token lasts an hour, a run may last hours): what the
        // file holds when the reports are delivered signs them, not what it held at the start.
        let rotating = try delivery(token: false, key: "rotated")
        try """
        aws_access_key_id = \(server.temporary.accessKeyID)
        aws_secret_access_key = \(server.temporary.secretAccessKey)
        aws_session_token = \(server.temporary.sessionToken)
        """.write(toFile: directory.appendingPathComponent("credentials-rotated").path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory.appendingPathComponent("credentials-rotated").path)
        try await rotating.deliver([report])
        #expect(try await server.object(key: "rotated/2026-10-summary.csv").status == 200)
    }
}
