import Foundation
import HTTP

/// moto's S3 server on loopback, signatures enforced, with one bucket and one access key
/// (Tests/Fixtures/s3/moto-s3.py, run with the test tools' Python: Jobs/local/lib/tools.sh installs moto).
///
/// Started with posix_spawn, not Foundation's `Process`: it lives for a whole test and must not keep other
/// tests' descriptors (`InheritedDescriptors`), and `Process` watches each child through a descriptor of
/// its own that closing them all would take away, leaving every later `waitUntilExit` of the process hung.
public final class S3TestServer: @unchecked Sendable {
    public let port: Int
    public let bucket: String
    public let accessKeyID: String
    public let secretAccessKey: String
    /// Temporary credentials of a role allowed the same (STS AssumeRole): their key is refused without the token.
    public let temporary: (accessKeyID: String, secretAccessKey: String, sessionToken: String)
    let pid: pid_t
    /// The server's standard input: closing it stops the server.
    let input: Int32

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
        // Both pipes close-on-exec in this process (pipe2 is not visible to Swift: pipe, then FD_CLOEXEC); the
        // child gets its ends as 0 and 1 only.
        var output: [Int32] = [0, 0]
        var input: [Int32] = [0, 0]
        guard pipe(&output) == 0, pipe(&input) == 0 else { throw Failure(description: "pipe failed") }
        for descriptor in output + input { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let command = InheritedDescriptors.closed([python.path, repository.appendingPathComponent("Tests/Fixtures/s3/moto-s3.py").path, bucket])
        let argv = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, environ)
        close(input[0])
        close(output[1])
        guard spawned == 0 else {
            close(input[1])
            close(output[0])
            throw Failure(description: "cannot start the S3 test server: \(String(cString: strerror(spawned)))")
        }
        // The first line, once the server listens and the bucket exists.
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(output[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        close(output[0])
        let words = String(decoding: line, as: UTF8.self).split(separator: " ").map(String.init)
        let word = { (index: Int) in words.count == 7 ? words[index] : "" }
        let server = S3TestServer(
            port: Int(word(1)) ?? 0, bucket: bucket, accessKeyID: word(2), secretAccessKey: word(3), temporary: (word(4), word(5), word(6)),
            pid: pid, input: input[1])
        guard words.count == 7, words[0] == "LISTENING", server.port > 0 else {
            server.stop()
            throw Failure(description: "the S3 test server did not start: \(String(decoding: line, as: UTF8.self))")
        }
        return server
    }

    init(
        port: Int, bucket: String, accessKeyID: String, secretAccessKey: String,
        temporary: (accessKeyID: String, secretAccessKey: String, sessionToken: String), pid: pid_t, input: Int32
    ) {
        self.port = port
        self.bucket = bucket
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.temporary = temporary
        self.pid = pid
        self.input = input
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
        close(input)
        var status: Int32 = 0
        for _ in 0..<50 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(100_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
