public import Foundation
public import Logging

/// One JSON object per line on stderr, for log collectors: `{"ts":…,"level":…,"logger":…,"msg":…,…metadata}`.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public let label: String

    public init(label: String, level: Logger.Level) {
        self.label = label
        logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let fields = metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }).mapValues(Self.plain)
        FileHandle.standardError.write(Self.line(level: event.level.rawValue, logger: label, message: "\(event.message)", fields: fields))
    }

    /// One log line, newline included: what `log` writes, for a record made outside swift-log.
    public static func line(level: String, logger: String, message: String, fields: [String: Any] = [:]) -> Data {
        var object: [String: Any] = fields
        object["ts"] = timestamp()
        object["level"] = level
        object["logger"] = logger
        object["msg"] = message
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return Data("{\"level\":\"\(level)\",\"msg\":\"a log line could not be encoded\"}\n".utf8)
        }
        return data + Data("\n".utf8)
    }

    static func plain(_ value: Logger.MetadataValue) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let value): "\(value)"
        case .array(let values): values.map(plain)
        case .dictionary(let values): values.mapValues(plain)
        }
    }

    static func timestamp() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date())
    }
}
