/// A request as the simulator sees it, independent of the HTTP library.
public struct SimulatorRequest: Sendable {
    public var method: String
    /// The path without query string, still percent-encoded.
    public var path: String
    public var query: [(String, String)]
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(method: String, path: String, query: [(String, String)] = [], headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public func queryValues(_ name: String) -> [String] { query.filter { $0.0 == name }.map(\.1) }

    /// Parses `a=1&b=2` with percent-decoding.
    public static func parseQuery(_ text: Substring) -> [(String, String)] {
        text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (percentDecode(parts[0]), parts.count > 1 ? percentDecode(parts[1]) : "")
        }
    }

    static func percentDecode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// What the simulator answers: a response, or one of the ways a server can misbehave.
public indirect enum SimulatorReply: Sendable {
    case respond(status: Int, headers: [(String, String)], body: [UInt8])
    /// Close the connection with a TCP reset instead of answering.
    case reset
    /// Announce the whole body, send half, close.
    case truncated(status: Int, headers: [(String, String)], body: [UInt8])
    /// Answer after a pause.
    case delayed(milliseconds: Int, SimulatorReply)

    static func json(_ status: Int, _ body: [UInt8], headers: [(String, String)] = []) -> SimulatorReply {
        .respond(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    /// Apple's error body, with exactly `Content-Type: application/json` (Apple's Python library requires it).
    static func appleError(_ status: Int, _ code: Int64, _ message: String, headers: [(String, String)] = []) -> SimulatorReply {
        json(status, Array("{\"errorCode\":\(code),\"errorMessage\":\"\(message)\"}".utf8), headers: headers)
    }

    public var status: Int? {
        switch self {
        case .respond(let status, _, _), .truncated(let status, _, _): status
        case .reset: nil
        case .delayed(_, let reply): reply.status
        }
    }
}
