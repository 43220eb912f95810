import Foundation
import Locking

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

    /// - Parameter headers: decoded headers of earlier JWSs, reused when this one's header is byte for byte
    ///   the same (an App Store header is 4 KB of certificates, the same on every JWS of a signing chain).
    init(_ text: String, headers: JWSHeaderCache? = nil) throws(VerificationError) {
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
            let encodedHeader = UnsafeBufferPointer(rebasing: buffer[..<first])
            let header: HeaderSegment
            if let known = headers?.header(encoded: encodedHeader) {
                header = .known(known)
            } else if let bytes = Base64.decodeURL(bytes: encodedHeader) {
                header = .decoded(bytes)
            } else {
                return .failure("the header is not base64url")
            }
            guard let payload = Base64.decodeURL(bytes: UnsafeBufferPointer(rebasing: buffer[(first + 1)..<second])) else {
                return .failure("the payload is not base64url")
            }
            guard let signature = Base64.decodeURL(bytes: UnsafeBufferPointer(rebasing: buffer[(second + 1)...])) else {
                return .failure("the signature is not base64url")
            }
            return .decoded(header: header, headerLength: first, payload: payload, signature: signature, signingInputLength: second)
        }
        guard case .decoded(let headerSegment, let headerLength, let payload, let signature, let signingInputLength) = segments else {
            if case .failure(let reason) = segments { throw VerificationError(.malformedJWS(reason)) }
            throw VerificationError(.malformedJWS("unreadable"))
        }
        switch headerSegment {
        case .known(let known):
            header = known
        case .decoded(let bytes):
            let decoded: Header
            do {
                decoded = try JSONDecoder().decode(Header.self, from: Data(bytes))
            } catch {
                throw VerificationError(.malformedJWS("the header is not a JSON object with alg and x5c"))
            }
            header = decoded
            if let headers {
                contiguous.withUTF8 { buffer in headers.remember(encoded: UnsafeBufferPointer(rebasing: buffer[..<headerLength]), decoded) }
            }
        }
        self.payload = payload
        self.signature = signature
        let utf8 = contiguous.utf8
        signingInput = contiguous[utf8.startIndex..<utf8.index(utf8.startIndex, offsetBy: signingInputLength)].utf8
    }

    private enum HeaderSegment {
        case known(Header)
        case decoded([UInt8])
    }

    private enum Segments {
        case decoded(header: HeaderSegment, headerLength: Int, payload: [UInt8], signature: [UInt8], signingInputLength: Int)
        case failure(String)
    }
}

/// The decoded headers of the last few distinct JWS headers, by their encoded bytes. Only headers that
/// decoded are kept; whether their chain is trusted is still judged for every JWS.
final class JWSHeaderCache: Sendable {
    private struct Entry: Sendable {
        let encoded: [UInt8]
        let header: CompactJWS.Header
    }

    /// A run sees one signing chain, or two across a rotation of Apple's leaf.
    static let capacity = 4
    private let entries = Locked<[Entry]>([])

    func header(encoded: UnsafeBufferPointer<UInt8>) -> CompactJWS.Header? {
        entries.withLock { entries in
            entries.first { entry in
                entry.encoded.count == encoded.count
                    && entry.encoded.withUnsafeBufferPointer { known in
                        guard let left = known.baseAddress, let right = encoded.baseAddress else { return encoded.isEmpty }
                        return memcmp(left, right, encoded.count) == 0
                    }
            }?.header
        }
    }

    func remember(encoded: UnsafeBufferPointer<UInt8>, _ header: CompactJWS.Header) {
        let entry = Entry(encoded: Array(encoded), header: header)
        entries.withLock { entries in
            guard !entries.contains(where: { $0.encoded == entry.encoded }) else { return }
            if entries.count >= Self.capacity { entries.removeFirst() }
            entries.append(entry)
        }
    }
}
