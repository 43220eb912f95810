/// Base64 and base64url at the byte level. Foundation's string-replacing route costs a third of a JWS
/// verification on Linux; this is a plain table decode.
public enum Base64 {
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Decodes base64url without padding (JWS segments). Also accepts the standard alphabet and padding.
    public static func decodeURL(_ text: some StringProtocol) -> [UInt8]? { decode(text.utf8, allowPadding: true) }

    /// `decodeURL` of text already in bytes (a slice of a JWS).
    public static func decodeURL(bytes: some Sequence<UInt8>) -> [UInt8]? { decode(bytes, allowPadding: true) }

    /// Decodes standard base64 (x5c entries, receipts), with or without padding; ignores line breaks.
    public static func decodeStandard(_ text: some StringProtocol) -> [UInt8]? {
        decode(text.utf8.lazy.filter { $0 != 0x0A && $0 != 0x0D }, allowPadding: true)
    }

    /// Encodes as base64url without padding.
    public static func encodeURL(_ bytes: some Sequence<UInt8>) -> String { encode(bytes, alphabet: urlAlphabet, pad: false) }

    /// Encodes as standard base64 with padding.
    public static func encodeStandard(_ bytes: some Sequence<UInt8>) -> String {
        encode(bytes, alphabet: standardAlphabet, pad: true)
    }

    private static func decode(_ input: some Sequence<UInt8>, allowPadding: Bool) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(input.underestimatedCount * 3 / 4 + 3)
        var accumulator: UInt32 = 0
        var bits = 0
        var padding = 0
        for character in input {
            if character == UInt8(ascii: "=") {
                guard allowPadding else { return nil }
                padding += 1
                continue
            }
            guard padding == 0 else { return nil }  // data after padding
            let value = decodeTable[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero padding bits, and a single leftover symbol cannot encode a byte.
        guard bits < 6, accumulator & ((1 << UInt32(bits)) - 1) == 0, padding <= 2 else { return nil }
        return output
    }

    private static func encode(_ bytes: some Sequence<UInt8>, alphabet: [UInt8], pad: Bool) -> String {
        var output: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int((accumulator >> UInt32(bits)) & 0x3F)])
            }
        }
        if bits > 0 { output.append(alphabet[Int((accumulator << UInt32(6 - bits)) & 0x3F)]) }
        if pad { while output.count % 4 != 0 { output.append(UInt8(ascii: "=")) } }
        return String(decoding: output, as: UTF8.self)
    }
}
