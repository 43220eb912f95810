import Crypto
import Foundation
import Locking
@_spi(FixedExpiryValidationTime) import X509

/// Validates (leaf, intermediate) pairs from `x5c` against the trusted roots at a given time, and remembers
/// pairs it has validated so that a batch pays one ECDSA verification per JWS, not a chain validation.
///
/// Like Apple's libraries it ignores `x5c[2]`: trust comes only from the configured roots (some of Apple's
/// own test vectors carry an older copy of the root there).
final class ChainValidator: Sendable {
    /// What a validated pair leaves behind: the leaf's key and the instants between which every certificate
    /// of the chain is valid. Signatures, names and policies do not depend on time, so a later signedDate
    /// inside the window needs no new validation.
    struct ValidatedChain: Sendable {
        let leafKey: P256.Signing.PublicKey
        let validFrom: Date
        let validUntil: Date
    }

    /// A validated pair and what it left behind.
    private struct CachedPair: Sendable {
        let leaf: String
        let intermediate: String
        let chain: ValidatedChain

        func holds(_ x5c: [String]) -> Bool { leaf == x5c[0] && intermediate == x5c[1] }
    }

    private let roots: [Certificate]
    /// Searched in order, compared by the certificates' text. While the header cache hands out the same
    /// strings for the same header, equal storage compares without reading it; otherwise a hit costs two
    /// compares of about 1.5 KB. Either is cheaper than the dictionary it replaced, which built and hashed a
    /// joined 3 KB key for every JWS.
    private let cache = Locked<[CachedPair]>([])
    /// Apple rotates its signing leaf every couple of years: a handful of pairs in any real batch.
    private static let cacheLimit = 64

    init(roots: [Certificate]) {
        self.roots = roots
    }

    /// The leaf's public key, if the chain in `x5c` is trusted at `time`.
    func leafKey(x5c: [String], at time: Date) async throws(VerificationError) -> P256.Signing.PublicKey {
        guard x5c.count == 3 else { throw VerificationError(.wrongChainLength(x5c.count)) }
        let cached = cache.withLock { pairs in pairs.first { $0.holds(x5c) }?.chain }
        if let cached {
            guard time >= cached.validFrom, time <= cached.validUntil else {
                // Outside the window: validate again, which names the certificate and the dates.
                return try await validate(x5c: x5c, at: time).leafKey
            }
            return cached.leafKey
        }
        return try await validate(x5c: x5c, at: time).leafKey
    }

    private func validate(x5c: [String], at time: Date) async throws(VerificationError)
        -> ValidatedChain
    {
        let leaf = try Self.certificate(x5c[0], role: "leaf")
        let intermediate = try Self.certificate(x5c[1], role: "intermediate")
        // Checked here first so that the error names the certificate and its dates.
        for (certificate, role) in [(leaf, "leaf"), (intermediate, "intermediate")]
        where time < certificate.notValidBefore || time > certificate.notValidAfter {
            throw VerificationError(
                .certificateNotValidAtSigningTime(
                    certificate: role, notBefore: certificate.notValidBefore, notAfter: certificate.notValidAfter,
                    signedAt: time))
        }
        guard leaf.extensions[oid: AppleOIDs.leafMarker] != nil else {
            throw VerificationError(.missingAppleExtension(certificate: "leaf", oid: "\(AppleOIDs.leafMarker)"))
        }
        guard intermediate.extensions[oid: AppleOIDs.intermediateMarker] != nil else {
            throw VerificationError(
                .missingAppleExtension(certificate: "intermediate", oid: "\(AppleOIDs.intermediateMarker)"))
        }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            AppleOIDPolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result else {
            if case .couldNotValidate(let failures) = result, !failures.isEmpty {
                let reasons = Set(failures.map { "\($0.policyFailureReason)" }).sorted().joined(separator: "; ")
                throw VerificationError(.untrustedChain(reasons))
            }
            // swift-certificates reports no failure at all when no path reaches a trusted root.
            throw VerificationError(.untrustedChain("no path from the leaf to a trusted root"))
        }
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw VerificationError(.invalidCertificate("the leaf's key is not a P-256 key"))
        }
        let validated = ValidatedChain(
            leafKey: leafKey, validFrom: chain.map(\.notValidBefore).max() ?? time,
            validUntil: chain.map(\.notValidAfter).min() ?? time)
        cache.withLock { pairs in
            pairs.removeAll { $0.holds(x5c) }
            if pairs.count >= Self.cacheLimit { pairs.removeAll() }
            pairs.append(CachedPair(leaf: x5c[0], intermediate: x5c[1], chain: validated))
        }
        return validated
    }

    private static func certificate(_ base64: String, role: String) throws(VerificationError) -> Certificate {
        guard base64.utf8.count <= CompactJWS.maximumCertificateLength else {
            throw VerificationError(.invalidCertificate("the \(role) certificate is larger than \(CompactJWS.maximumCertificateLength) bytes"))
        }
        guard let der = Base64.decodeStandard(base64) else {
            throw VerificationError(.invalidCertificate("the \(role) certificate is not base64"))
        }
        do {
            return try Certificate(derEncoded: der)
        } catch {
            throw VerificationError(.invalidCertificate("the \(role) certificate is not DER X.509: \(error)"))
        }
    }
}
