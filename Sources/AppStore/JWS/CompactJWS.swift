import Foundation

/// A JWS in compact serialization, split and decoded but not yet trusted.
struct CompactJWS {
    /// App Store JWSs are a few kilobytes (three certificates and a payload); anything far larger is refused
    /// before any decoding, so a hostile input cannot make the job allocate much.
    static let maximumLength = 64 * 1024
    static let maximumCertificateLength = 8 * 1024

    struct Header: Decodable {
        let alg: String?
        let x5c: [String]?
    }

    let header: Header
    let payload: [UInt8]
    let signature: [UInt8]
    /// `base64url(header) "." base64url(payload)`: the bytes the signature covers.
    let signingInput: Substring.UTF8View

    init(_ text: String) throws(VerificationError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw VerificationError(.malformedJWS("longer than \(Self.maximumLength) bytes"))
        }
        // Everything at the byte level, on the string's contiguous UTF-8: String.split works on Characters
        // (grapheme breaking), which profiling showed costing about a sixth of a whole run.
        var contiguous = text
        let segments = contiguous.withUTF8 { buffer -> Segments in
            let dot = UInt8(ascii: ".")
            guard let first = buffer.firstIndex(of: dot), let second = buffer[(first + 1)...].firstIndex(of: dot),
                buffer[(second + 1)...].firstIndex(of: dot) == nil
            else { return .failure("expected 3 dot-separated segments, found \(buffer.filter { $0 == dot }.count + 1)") }
            guard let header = Base64.decodeURL(bytes: UnsafeBufferPointer(rebasing: buffer[..<first])) else {
                return .failure("the header is not base64url")
            }
            guard let payload = Base64.decodeURL(bytes: UnsafeBufferPointer(rebasing: buffer[(first + 1)..<second])) else {
                return .failure("the payload is not base64url")
            }
            guard let signature = Base64.decodeURL(bytes: UnsafeBufferPointer(rebasing: buffer[(second + 1)...])) else {
                return .failure("the signature is not base64url")
            }
            return .decoded(header: header, payload: payload, signature: signature, signingInputLength: second)
        }
        guard case .decoded(let headerBytes, let payload, let signature, let signingInputLength) = segments else {
            if case .failure(let reason) = segments { throw VerificationError(.malformedJWS(reason)) }
            throw VerificationError(.malformedJWS("unreadable"))
        }
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            throw VerificationError(.malformedJWS("the header is not a JSON object with alg and x5c"))
        }
        self.payload = payload
        self.signature = signature
        let utf8 = contiguous.utf8
        signingInput = contiguous[utf8.startIndex..<utf8.index(utf8.startIndex, offsetBy: signingInputLength)].utf8
    }

    private enum Segments {
        case decoded(header: [UInt8], payload: [UInt8], signature: [UInt8], signingInputLength: Int)
        case failure(String)
    }
}
