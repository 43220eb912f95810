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
        // Split on the bytes: String.split works on Characters (grapheme breaking), which profiling showed
        // costing about a sixth of a whole run.
        let bytes = text.utf8
        var dots: [String.Index] = []
        var index = bytes.startIndex
        while let dot = bytes[index...].firstIndex(of: UInt8(ascii: ".")) {
            dots.append(dot)
            guard dots.count <= 2 else { break }
            index = bytes.index(after: dot)
        }
        guard dots.count == 2 else {
            throw VerificationError(.malformedJWS("expected 3 dot-separated segments, found \(dots.count + 1)"))
        }
        let headerText = bytes[bytes.startIndex..<dots[0]]
        let payloadText = bytes[bytes.index(after: dots[0])..<dots[1]]
        let signatureText = bytes[bytes.index(after: dots[1])...]
        guard let headerBytes = Base64.decodeURL(bytes: headerText) else {
            throw VerificationError(.malformedJWS("the header is not base64url"))
        }
        guard let payload = Base64.decodeURL(bytes: payloadText) else {
            throw VerificationError(.malformedJWS("the payload is not base64url"))
        }
        guard let signature = Base64.decodeURL(bytes: signatureText) else {
            throw VerificationError(.malformedJWS("the signature is not base64url"))
        }
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            throw VerificationError(.malformedJWS("the header is not a JSON object with alg and x5c"))
        }
        self.payload = payload
        self.signature = signature
        signingInput = text[bytes.startIndex..<dots[1]].utf8
    }
}
