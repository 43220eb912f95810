import AppStore
public import Foundation

/// Reads and writes world files: JSONL, dates as RFC 3339 (or milliseconds).
public enum WorldFile {
    public struct LineError: Error, CustomStringConvertible {
        public let line: Int
        public let problem: String
        public var description: String { "world file line \(line): \(problem)" }
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            if let milliseconds = try? container.decode(Double.self) { return Date(timeIntervalSince1970: milliseconds / 1000) }
            let text = try container.decode(String.self)
            guard let date = RFC3339.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 date: \(text)")
            }
            return date
        }
        return decoder
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.format(date))
        }
        return encoder
    }

    private struct RecordKind: Decodable { let record: String? }

    /// Parses JSONL text; blank lines and lines starting with # are skipped.
    public static func parse(_ data: Data) throws -> [WorldLine] {
        let decoder = decoder()
        var lines: [WorldLine] = []
        var number = 0
        for slice in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            let trimmed = slice.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
            guard let first = trimmed.first, first != UInt8(ascii: "#") else { continue }
            let line = Data(trimmed)
            do {
                let kind = try decoder.decode(RecordKind.self, from: line)
                switch kind.record ?? "transaction" {
                case "app": lines.append(.app(try decoder.decode(AppRecord.self, from: line)))
                case "transaction": lines.append(.transaction(try decoder.decode(TransactionRecord.self, from: line)))
                case let other: throw LineError(line: number, problem: "unknown record kind \"\(other)\"")
                }
            } catch let error as LineError {
                throw error
            } catch {
                throw LineError(line: number, problem: "\(error)")
            }
        }
        return lines
    }

    public static func load(path: String) throws -> [WorldLine] {
        try parse(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    public static func encode(_ line: WorldLine) throws -> Data {
        switch line {
        case .app(let app): try encoder().encode(app)
        case .transaction(let transaction): try encoder().encode(transaction)
        }
    }

    public static func write(_ lines: [WorldLine], to path: String) throws {
        let encoder = encoder()
        var output = Data()
        for line in lines {
            switch line {
            case .app(let app): output += try encoder.encode(app)
            case .transaction(let transaction): output += try encoder.encode(transaction)
            }
            output.append(UInt8(ascii: "\n"))
        }
        try output.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

/// RFC 3339 dates (UTC output, any offset input, optional fraction).
public enum RFC3339 {
    public static func format(_ date: Date) -> String {
        let milliseconds = date.appleMilliseconds
        let seconds = Date(timeIntervalSince1970: TimeInterval(milliseconds.quotientFloor(1000)))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        let text = formatter.string(from: seconds)
        let fraction = milliseconds - milliseconds.quotientFloor(1000) * 1000
        guard fraction != 0 else { return text }
        return String(text.dropLast()) + "." + String(format: "%03d", fraction) + "Z"
    }

    public static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

extension Int64 {
    func quotientFloor(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
