import AppStore
import Dispatch
public import Foundation
import Locking

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

    /// Parses JSONL text; blank lines and lines starting with # are skipped. Lines are decoded on every core:
    /// a world of a million purchases is about 350 MB of JSON.
    public static func parse(_ data: Data) throws -> [WorldLine] {
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        let chunk = (lines.count + workers - 1) / workers
        let results = Locked<[Int: Result<[WorldLine], any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let range = min(lines.count, worker * chunk)..<min(lines.count, (worker + 1) * chunk)
            let decoder = decoder()
            let outcome = Result { () throws -> [WorldLine] in
                var parsed: [WorldLine] = []
                parsed.reserveCapacity(range.count)
                for index in range {
                    let trimmed = lines[index].drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
                    guard let first = trimmed.first, first != UInt8(ascii: "#") else { continue }
                    parsed.append(try parseLine(Data(trimmed), number: index + 1, decoder: decoder))
                }
                return parsed
            }
            results.withLock { $0[worker] = outcome }
        }
        return try results.withLock { results in try (0..<workers).flatMap { try results[$0]?.get() ?? [] } }
    }

    static func parseLine(_ line: Data, number: Int, decoder: JSONDecoder) throws -> WorldLine {
        // App records are rare and say so; everything else is decoded once, as a transaction.
        let isApp = line.range(of: Data(#""record":"app""#.utf8)) != nil || line.range(of: Data(#""record": "app""#.utf8)) != nil
        do {
            if isApp { return .app(try decoder.decode(AppRecord.self, from: line)) }
            let transaction = try decoder.decode(TransactionRecord.self, from: line)
            return .transaction(transaction)
        } catch {
            throw LineError(line: number, problem: "\(error)")
        }
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

    public static func write(_ lines: [WorldLine], to path: String, chunkSize: Int = 1 << 20) throws {
        let encoder = encoder()
        var output = try LineFileWriter(path: path, chunkSize: chunkSize)
        for line in lines {
            switch line {
            case .app(let app): try output.appendLine(try encoder.encode(app))
            case .transaction(let transaction): try output.appendLine(try encoder.encode(transaction))
            }
        }
        try output.finish()
    }
}

/// RFC 3339 dates (UTC output, any offset input, optional fraction), parsed at the byte level: a million
/// world lines hold two million dates.
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

    /// `YYYY-MM-DDTHH:MM:SS[.f…](Z|±HH:MM)`; nil for anything else.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for _ in 0..<count {
                let byte = bytes[index]
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
                index += 1
            }
            return value
        }
        func take(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2), take("Tt "),
            let hour = number(2), take(":"), let minute = number(2), take(":"), let second = number(2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if take(".") {
            var scale = 0.1
            var digits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
                digits += 1
            }
            guard digits > 0 else { return nil }
        }
        var offset: Int64 = 0
        if take("Zz") {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = number(2), take(":"), let minutes = number(2) else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let days = era * 146_097 + yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear - 719_468
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction)
    }
}

extension Int64 {
    func quotientFloor(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
