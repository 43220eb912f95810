/// Percent-encoding for the parts of a URL (and form bodies) that clawback builds from data: RFC 3986's
/// unreserved characters pass, every other byte of the UTF-8 is `%XX`. Ids are digits or tokens, but a grant
/// row or a store's answer could hold anything.
public enum URLEncoding {
    /// A query value or key, or a form field (`application/x-www-form-urlencoded`).
    public static func unreserved(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return encoded
    }

    /// One path segment: as `unreserved`, and "." or ".." alone encoded too, since they would navigate.
    public static func pathSegment(_ text: String) -> String {
        let encoded = unreserved(text)
        return encoded == "." ? "%2E" : encoded == ".." ? "%2E%2E" : encoded
    }
}
