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
        let parts = text.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw VerificationError(.malformedJWS("expected 3 dot-separated segments, found \(parts.count)"))
        }
        guard let headerBytes = Base64.decodeURL(parts[0]) else {
            throw VerificationError(.malformedJWS("the header is not base64url"))
        }
        guard let payload = Base64.decodeURL(parts[1]) else {
            throw VerificationError(.malformedJWS("the payload is not base64url"))
        }
        guard let signature = Base64.decodeURL(parts[2]) else {
            throw VerificationError(.malformedJWS("the signature is not base64url"))
        }
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            throw VerificationError(.malformedJWS("the header is not a JSON object with alg and x5c"))
        }
        self.payload = payload
        self.signature = signature
        signingInput = text[parts[0].startIndex..<parts[1].endIndex].utf8
    }
}
