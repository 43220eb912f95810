public import Foundation

/// Why a piece of App Store signed data was not trusted. Every reason is specific enough to act on; none
/// of them ever lets the data through.
public struct VerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Not three base64url segments, undecodable header or payload, or over the size limit.
        case malformedJWS(String)
        /// The header's `alg` is not ES256 (`none`, HS256 and every other algorithm are refused).
        case unsupportedAlgorithm(String)
        /// `x5c` is missing or does not hold exactly three certificates.
        case wrongChainLength(Int)
        /// A certificate in `x5c` could not be parsed.
        case invalidCertificate(String)
        /// A certificate of the chain was not valid at the payload's signedDate.
        case certificateNotValidAtSigningTime(certificate: String, notBefore: Date, notAfter: Date, signedAt: Date)
        /// The chain does not lead to a trusted root, or breaks X.509 rules.
        case untrustedChain(String)
        /// The leaf or the intermediate lacks Apple's marker extension.
        case missingAppleExtension(certificate: String, oid: String)
        /// The signature does not verify with the leaf's key: the data was altered, or signed by another key.
        case badSignature
        /// The payload is well signed but says another app.
        case bundleMismatch(expected: String, actual: String?)
        /// The payload is well signed but says another environment.
        case environmentMismatch(expected: String, actual: String?)
        /// A production notification for another App Store app id.
        case appAppleIDMismatch(expected: Int64, actual: Int64?)
        /// Signed, but the payload lacks a field this kind of data must have, or has one of the wrong type.
        case invalidPayload(String)
        /// Xcode StoreKit-testing data: signed by Xcode, never by the App Store.
        case notSignedByAppStore
    }

    public let reason: Reason

    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .malformedJWS(let detail): "malformed JWS: \(detail)"
        case .unsupportedAlgorithm(let alg): "unsupported JWS algorithm \"\(alg)\": App Store data is signed with ES256"
        case .wrongChainLength(let count): "x5c must hold exactly 3 certificates (leaf, intermediate, root), it holds \(count)"
        case .invalidCertificate(let detail): "a certificate in x5c is invalid: \(detail)"
        case .certificateNotValidAtSigningTime(let certificate, let notBefore, let notAfter, let signedAt):
            "the \(certificate) certificate was not valid when the data was signed (\(Self.format(signedAt)); "
                + "valid \(Self.format(notBefore)) to \(Self.format(notAfter)))"
        case .untrustedChain(let detail): "the certificate chain is not trusted: \(detail)"
        case .missingAppleExtension(let certificate, let oid): "the \(certificate) certificate lacks Apple's extension \(oid)"
        case .badSignature: "the ES256 signature does not verify with the leaf certificate's key (tampered or forged)"
        case .bundleMismatch(let expected, let actual): "bundle id is \(actual.map { "\"\($0)\"" } ?? "missing"), expected \"\(expected)\""
        case .environmentMismatch(let expected, let actual):
            "environment is \(actual.map { "\"\($0)\"" } ?? "missing"), expected \"\(expected)\""
        case .appAppleIDMismatch(let expected, let actual):
            "appAppleId is \(actual.map(String.init) ?? "missing"), expected \(expected)"
        case .invalidPayload(let detail): "invalid payload: \(detail)"
        case .notSignedByAppStore:
            "Xcode StoreKit-testing data: signed by Xcode, not by the App Store, so it cannot be verified"
        }
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
