import Foundation
import HTTP
import Spawning

/// moto's S3 server on loopback, signatures enforced, with one bucket and one access key
/// (Tests/Fixtures/s3/moto-s3.py, run with the test tools' Python: Jobs/local/lib/tools.sh installs moto).
///
/// Started with posix_spawn (`SpawnedChild`), not Foundation's `Process`: it lives for a whole test and must not
/// keep other tests' descriptors (SpawnedChild gives it 0, 1 and 2 only).
public final class S3TestServer: @unchecked Sendable {
    public let port: Int
    public let bucket: String
    public let accessKeyID: String
    public let secretAccessKey: String
    /// Temporary credentials of a role allowed the same (STS AssumeRole): their key is refused without the token.
    public let temporary: (accessKeyID: String, secretAccessKey: String, sessionToken: String)
    /// The server: it stops at the end of its standard input.
    let child: SpawnedChild

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    public static func start(bucket: String = "finance-reports") throws -> S3TestServer {
        let python = repository.appendingPathComponent(".build-tools/venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: python.path) {
                throw Failure(description: "\(python.path) links to \(target), which cannot be run here (hidden or removed)")
            }
            throw Failure(description: "no \(python.path): run the suite through Jobs/local/test.sh, which installs moto (Jobs/local/lib/tools.sh)")
        }
        let command = [python.path, repository.appendingPathComponent("Tests/Fixtures/s3/moto-s3.py").path, bucket]
        let child = try SpawnedChild(
            command, environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }, input: true, standardOutput: .captured)
        // The first line, once the server listens and the bucket exists.
        let line = child.firstOutputLine()
        let words = String(decoding: line, as: UTF8.self).split(separator: " ").map(String.init)
        let word = { (index: Int) in words.count == 7 ? words[index] : "" }
        let server = S3TestServer(
            port: Int(word(1)) ?? 0, bucket: bucket, accessKeyID: word(2), secretAccessKey: word(3), temporary: (word(4), word(5), word(6)),
            child: child)
        guard words.count == 7, words[0] == "LISTENING", server.port > 0 else {
            server.stop()
            throw Failure(description: "the S3 test server did not start: \(String(decoding: line, as: UTF8.self))")
        }
        return server
    }

    init(
        port: Int, bucket: String, accessKeyID: String, secretAccessKey: String,
        temporary: (accessKeyID: String, secretAccessKey: String, sessionToken: String), child: SpawnedChild
    ) {
        self.port = port
        self.bucket = bucket
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.temporary = temporary
        self.child = child
    }

    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// A credentials file for clawback (mode 0600), with this server's key or the secret given.
    public func writeCredentials(to path: String, secret: String? = nil, mode: Int = 0o600) throws {
        try "# moto's key\naws_access_key_id = \(accessKeyID)\naws_secret_access_key = \(secret ?? secretAccessKey)\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    /// The object's bytes, read back with a signed GET.
    public func object(key: String) async throws -> (status: Int, body: [UInt8]) {
        let http = try HTTPClient(configuration: .init(protocolPreference: .http1))
        defer { http.shutdown() }
        var request = HTTPRequest(
            url: "\(endpoint)/\(bucket)/\(key)",
            headers: ["x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"])
        request.awsSignature = AWSSignature(region: "us-east-1", service: "s3", accessKeyID: accessKeyID, secretAccessKey: secretAccessKey)
        let response = try await http.send(request)
        return (response.status, response.body)
    }

    /// Closes the server's standard input (it stops), then reaps it; killed if it has not stopped in 5 s.
    public func stop() {
        child.closeInput()
        for _ in 0..<50 {
            if child.poll() != nil { return }
            usleep(100_000)
        }
        kill(child.pid, SIGKILL)
        _ = child.wait()
    }
}
