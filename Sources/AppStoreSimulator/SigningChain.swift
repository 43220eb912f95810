import AppStore
public import Crypto
public import Foundation
public import SwiftASN1
public import X509

/// A certificate chain shaped like Apple's App Store signing chain (root, intermediate with
/// 1.2.840.113635.100.6.2.1, leaf with 1.2.840.113635.100.6.11.1), with subject and authority key
/// identifiers and critical basic constraints so that strict X.509 validation passes, and the ES256 signing
/// of JWSs with its leaf. Variants break one rule each, for the simulator's hostile modes and the tests.
public struct SigningChain: Sendable {
    public let rootKey: P256.Signing.PrivateKey
    public let intermediateKey: P256.Signing.PrivateKey
    public let leafKey: P256.Signing.PrivateKey
    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate

    /// How the chain deviates from Apple's, if at all.
    public struct Variant: Sendable, Equatable {
        public var leafHasAppleMarker = true
        public var intermediateHasAppleMarker = true
        /// Each certificate carries the other's marker.
        public var markersSwapped = false
        /// The leaf's validity, relative to the generation time.
        /// Wide by default: the simulator signs notifications dated months back, and Apple's leaf is valid
        /// for about two years.
        public var leafValidity: ClosedRange<TimeInterval> = (-86_400 * 400)...(86_400 * 400)
        /// The leaf signs itself instead of being issued by the intermediate (a forger's shortcut).
        public var leafSelfSigned = false

        public init() {}

        public static let apple = Variant()
    }

    /// Generates a new chain with fresh keys.
    public init(variant: Variant = .apple, now: Date = Date(), name: String = "clawback App Store Simulator") throws {
        try self.init(
            rootKey: P256.Signing.PrivateKey(), intermediateKey: P256.Signing.PrivateKey(),
            leafKey: P256.Signing.PrivateKey(), variant: variant, now: now, name: name)
    }

    /// Builds a chain from existing keys (a simulator state directory keeps them across restarts).
    public init(
        rootKey: P256.Signing.PrivateKey, intermediateKey: P256.Signing.PrivateKey, leafKey: P256.Signing.PrivateKey,
        variant: Variant = .apple, now: Date = Date(), name: String = "clawback App Store Simulator"
    ) throws {
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName(name)
            CommonName("\(name) Root CA - G3")
        }
        let intermediateName = try DistinguishedName {
            CountryName("US")
            OrganizationName(name)
            CommonName("\(name) Worldwide Developer Relations CA - G6")
        }
        let leafName = try DistinguishedName {
            CountryName("US")
            OrganizationName(name)
            CommonName("\(name) Receipt Signing")
        }
        let marker: ArraySlice<UInt8> = [0x05, 0x00]  // DER NULL, as in Apple's certificates
        let leafMarker = variant.markersSwapped ? SigningChainOIDs.intermediate : SigningChainOIDs.leaf
        let intermediateMarker = variant.markersSwapped ? SigningChainOIDs.leaf : SigningChainOIDs.intermediate
        let rootSKI = Self.keyIdentifier(rootKey.publicKey)
        let intermediateSKI = Self.keyIdentifier(intermediateKey.publicKey)

        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: now - 86_400 * 365 * 5, notValidAfter: now + 86_400 * 365 * 20, issuer: rootName,
            subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(keyIdentifier: rootSKI)
            }, issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: now - 86_400 * 365 * 5, notValidAfter: now + 86_400 * 365 * 10, issuer: rootName,
            subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                AuthorityKeyIdentifier(keyIdentifier: rootSKI)
                SubjectKeyIdentifier(keyIdentifier: intermediateSKI)
                if variant.intermediateHasAppleMarker {
                    Certificate.Extension(oid: intermediateMarker, critical: false, value: marker)
                }
            }, issuerPrivateKey: .init(rootKey))
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now + variant.leafValidity.lowerBound, notValidAfter: now + variant.leafValidity.upperBound,
            issuer: variant.leafSelfSigned ? leafName : intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                AuthorityKeyIdentifier(keyIdentifier: variant.leafSelfSigned ? Self.keyIdentifier(leafKey.publicKey) : intermediateSKI)
                SubjectKeyIdentifier(keyIdentifier: Self.keyIdentifier(leafKey.publicKey))
                if variant.leafHasAppleMarker {
                    Certificate.Extension(oid: leafMarker, critical: false, value: marker)
                }
            }, issuerPrivateKey: .init(variant.leafSelfSigned ? leafKey : intermediateKey))
    }

    /// A chain loaded as it was saved (a simulator state directory).
    public init(
        rootKey: P256.Signing.PrivateKey, intermediateKey: P256.Signing.PrivateKey, leafKey: P256.Signing.PrivateKey,
        root: Certificate, intermediate: Certificate, leaf: Certificate
    ) {
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
    }

    /// RFC 5280's method 1: SHA-1 of the public key bits.
    static func keyIdentifier(_ key: P256.Signing.PublicKey) -> ArraySlice<UInt8> {
        ArraySlice(Insecure.SHA1.hash(data: key.x963Representation))
    }

    public static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// The `x5c` header entries: standard base64 DER, leaf first.
    public func x5c() throws -> [String] {
        try [leaf, intermediate, root].map { Base64.encodeStandard(try Self.der($0)) }
    }

    /// The root in PEM, for the job's `--root` / extra trusted roots and for Apple's libraries.
    public func rootPEM() throws -> String { try root.serializeAsPEM().pemString }

    /// An App Store-shaped JWS of `payload`, signed by the leaf: header `{"alg":"ES256","x5c":[...]}`.
    public func sign(payload: [UInt8]) throws -> String {
        try prepared().sign(payload: payload)
    }

    /// The leaf's signer with its header encoded once: the header is the same for every JWS, and encoding
    /// three certificates per answer was most of the simulator's CPU.
    public func prepared() throws -> PreparedSigner {
        try Self.prepared(header: ["alg": "ES256", "x5c": try x5c()], key: leafKey)
    }

    /// A JWS with any header, signed by `key` (hostile variants: other alg, other x5c).
    public static func sign(payload: [UInt8], header: [String: any Sendable], key: P256.Signing.PrivateKey) throws
        -> String
    {
        try prepared(header: header, key: key).sign(payload: payload)
    }

    private static func prepared(header: [String: any Sendable], key: P256.Signing.PrivateKey) throws -> PreparedSigner {
        let headerBytes = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        return PreparedSigner(headerSegment: Base64.encodeURL(headerBytes), key: key)
    }
}

/// Signs JWSs under one fixed, already encoded header.
public struct PreparedSigner: Sendable {
    /// base64url of the header JSON.
    public let headerSegment: String
    public let key: P256.Signing.PrivateKey

    public init(headerSegment: String, key: P256.Signing.PrivateKey) {
        self.headerSegment = headerSegment
        self.key = key
    }

    public func sign(payload: [UInt8]) throws -> String {
        let input = headerSegment + "." + Base64.encodeURL(payload)
        let signature = try key.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + Base64.encodeURL(signature)
    }
}

/// Apple's marker extension OIDs, for building chains.
public enum SigningChainOIDs {
    public static let leaf: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    public static let intermediate: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
}
