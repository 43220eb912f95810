import Foundation

/// moto's S3 server on loopback, signatures enforced, with one bucket and one access key
/// (Tests/Fixtures/s3/moto-s3.py, run with the test tools' Python: Jobs/local/lib/tools.sh installs moto).
public final class S3TestServer: @unchecked Sendable {
    public let port: Int
    public let bucket: String
    public let accessKeyID: String
    public let secretAccessKey: String
    let process: Process
    let input: Pipe

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    public static func start(bucket: String = "finance-reports") throws -> S3TestServer {
        let python = repository.appendingPathComponent(".build-tools/venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw Failure(description: "no \(python.path): run the suite through Jobs/local/test.sh, which installs moto (Jobs/local/lib/tools.sh)")
        }
        let process = Process()
        process.executableURL = python
        process.arguments = [repository.appendingPathComponent("Tests/Fixtures/s3/moto-s3.py").path, bucket]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line, once the server listens and the bucket exists.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        let words = String(decoding: line, as: UTF8.self).split(separator: " ").map(String.init)
        guard words.count == 4, words[0] == "LISTENING", let port = Int(words[1]) else {
            process.terminate()
            throw Failure(description: "the S3 test server did not start: \(String(decoding: line, as: UTF8.self))")
        }
        return S3TestServer(port: port, bucket: bucket, accessKeyID: words[2], secretAccessKey: words[3], process: process, input: input)
    }

    init(port: Int, bucket: String, accessKeyID: String, secretAccessKey: String, process: Process, input: Pipe) {
        self.port = port
        self.bucket = bucket
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.process = process
        self.input = input
    }

    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// A credentials file for clawback (mode 0600), with this server's key or the secret given.
    public func writeCredentials(to path: String, secret: String? = nil, mode: Int = 0o600) throws {
        try "# moto's key\naws_access_key_id = \(accessKeyID)\naws_secret_access_key = \(secret ?? secretAccessKey)\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    public func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
