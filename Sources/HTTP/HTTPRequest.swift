/// One HTTP request.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
        case delete = "DELETE"
        case head = "HEAD"
    }

    public var method: Method
    public var url: String
    public var headers: HTTPHeaders
    public var body: [UInt8]?
    /// Overrides the client's total timeout for this request.
    public var timeout: Duration?
    /// Overrides the client's connect timeout for this request.
    public var connectTimeout: Duration?
    /// Overrides the client's response body cap for this request (an answer known to be larger, such as a
    /// Pub/Sub pull of messages up to 10 MB each).
    public var maxResponseBytes: Int?
    /// Signs the request with AWS Signature Version 4 (libcurl's own signer), for S3-compatible storage.
    public var awsSignature: AWSSignature?

    public init(
        method: Method = .get, url: String, headers: HTTPHeaders = [:], body: [UInt8]? = nil, timeout: Duration? = nil,
        connectTimeout: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectTimeout = connectTimeout
    }
}

/// What libcurl needs to sign a request with AWS Signature Version 4 (`CURLOPT_AWS_SIGV4`). The secret is
/// handed to libcurl as an option of its own and never appears in a description.
public struct AWSSignature: Sendable, CustomStringConvertible {
    /// `aws:amz:REGION:SERVICE`, e.g. `aws:amz:eu-west-1:s3`.
    public var provider: String
    public var accessKeyID: String
    public var secretAccessKey: String

    public init(region: String, service: String, accessKeyID: String, secretAccessKey: String) {
        provider = "aws:amz:\(region):\(service)"
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    public var description: String { "AWS SigV4 \(provider) as \(accessKeyID)" }
}

/// Header fields in order, looked up case-insensitively (RFC 9110 field names are case-insensitive).
public struct HTTPHeaders: Sendable, ExpressibleByDictionaryLiteral, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public mutating func add(name: String, value: String) { fields.append((name: name, value: value)) }

    /// The first value of the field, if present.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }
}

extension String {
    func caseInsensitiveEquals(_ other: String) -> Bool {
        utf8.count == other.utf8.count && lowercased() == other.lowercased()
    }
}
