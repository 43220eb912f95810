package import Foundation

/// A fast path for the JSON that every checked grant costs (a transaction's payload, the answer around its
/// JWS): Foundation's Codable decoding took a tenth of a per-transaction run's CPU. It reads only the
/// simplest form of a JSON object, one level of members whose values are ASCII strings without escapes,
/// integers, `true`, `false` or `null`, each key once. Anything else (a nested value, an escape, a fraction
/// or exponent, a non-ASCII byte, a repeated key, a malformed byte) answers nil, and the caller decodes
/// with `JSONDecoder` as before: the fast path never decides what the general one would not, which a
/// property test checks over generated payloads.
package enum FlatJSON {
    /// One member's value.
    package enum Value: Equatable, Sendable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        case null

        /// As `decodeIfPresent(String.self)` would: `.some(nil)` for null, nil for another type.
        package var string: String?? {
            switch self {
            case .string(let text): text
            case .null: .some(nil)
            default: nil
            }
        }

        package var int64: Int64?? {
            switch self {
            case .integer(let number): number
            case .null: .some(nil)
            default: nil
            }
        }

        /// Nil (not representable, so the general decoder's error applies) when out of Int32's range.
        package var int32: Int32?? {
            switch self {
            case .integer(let number):
                if let small = Int32(exactly: number) { .some(small) } else { nil }
            case .null: .some(nil)
            default: nil
            }
        }

        package var bool: Bool?? {
            switch self {
            case .bool(let flag): flag
            case .null: .some(nil)
            default: nil
            }
        }

        /// Apple's timestamps (milliseconds since 1970), computed as `decodeMilliseconds` does.
        package var milliseconds: Date?? {
            switch self {
            case .integer(let number): Date(timeIntervalSince1970: Double(number) / 1000)
            case .null: .some(nil)
            default: nil
            }
        }
    }

    /// The members of `bytes` in order when it is one flat JSON object as described above; nil otherwise.
    package static func members(_ bytes: [UInt8]) -> [(key: String, value: Value)]? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer)
            return scanner.object()
        }
    }

    private struct Scanner {
        /// A signed transaction has 30 documented fields.
        static let maximumMembers = 128
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func object() -> [(key: String, value: Value)]? {
            skipWhitespace()
            guard take(UInt8(ascii: "{")) else { return nil }
            var members: [(key: String, value: Value)] = []
            members.reserveCapacity(32)
            skipWhitespace()
            if !take(UInt8(ascii: "}")) {
                repeat {
                    skipWhitespace()
                    guard let key = string() else { return nil }
                    skipWhitespace()
                    guard take(UInt8(ascii: ":")) else { return nil }
                    skipWhitespace()
                    guard let value = value() else { return nil }
                    // A repeated key is left to the general decoder, whatever it makes of it; so is an object of
                    // more members than any answer of Apple's has, which would make this check quadratic.
                    guard members.count < Self.maximumMembers, !members.contains(where: { $0.key == key }) else { return nil }
                    members.append((key, value))
                    skipWhitespace()
                } while take(UInt8(ascii: ","))
                guard take(UInt8(ascii: "}")) else { return nil }
            }
            skipWhitespace()
            return index == bytes.count ? members : nil
        }

        private mutating func value() -> Value? {
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""): return string().map(Value.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return integer().map(Value.integer)
            default: return nil
            }
        }

        /// A string of printable ASCII without escapes.
        private mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    index += 1
                    return text
                }
                guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            return nil
        }

        /// `-?(0|[1-9][0-9]*)` of at most 18 digits (always an Int64), ended by something that is not part of a
        /// number: a fraction, an exponent or a longer integer is the general decoder's.
        private mutating func integer() -> Int64? {
            let negative = take(UInt8(ascii: "-"))
            let start = index
            var magnitude: Int64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                // Counted before the digit is added: a 19th digit could overflow Int64, which stops the process.
                guard index - start < 18 else { return nil }
                magnitude = magnitude * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) { return nil }
            return negative ? -magnitude : magnitude
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
                default: return
                }
            }
        }
    }
}

/// A type with a fast path from `FlatJSON`: nil when the bytes are not a flat object, or a member is not of
/// the field's type, so that the caller decodes with `JSONDecoder` and gets its answer (or its error).
package protocol FlatJSONDecodable {
    init?(flatJSON bytes: [UInt8])
}
