import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import TestSupport
import Testing
import X509

/// Hostile signed data: every forgery is refused with its own reason.
@Suite("Forged signed data")
struct ForgedDataTests {
    static let signedAt = Date(timeIntervalSince1970: 1_790_000_000)

    static func payload(
        bundleID: String = "com.studio.game", environment: String = "Production",
        signedAt: Date = signedAt
    ) -> [UInt8] {
        let object: [String: Any] = [
            "transactionId": "2000000123", "originalTransactionId": "2000000123", "bundleId": bundleID,
            "productId": "gems_600", "environment": environment, "type": "Consumable", "quantity": 1,
            "purchaseDate": 1_789_000_000_000, "signedDate": signedAt.appleMilliseconds, "price": 4990, "currency": "USD",
        ]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }

    static let app = AppExpectation(bundleID: "com.studio.game", environment: .production)

    func reason(_ jws: String, roots: [Certificate], app: AppExpectation = app) async -> VerificationError.Reason? {
        do {
            _ = try await SignedDataVerifier(trustedRoots: roots).verifyTransaction(jws, for: app)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test("a genuine chain of our own verifies against its own root, and only against it")
    func genuine() async throws {
        let chain = try SigningChain(now: Self.signedAt)
        let jws = try chain.sign(payload: Self.payload())
        #expect(await reason(jws, roots: [chain.root]) == nil)
        guard case .untrustedChain? = await reason(jws, roots: [AppleRootCertificates.rootCAG3]) else {
            Issue.record("a foreign root was trusted")
            return
        }
    }

    @Test("alg none, HS256 keyed with the public key, and other algorithms are refused before anything else")
    func algorithms() async throws {
        let chain = try SigningChain(now: Self.signedAt)
        let x5c = try chain.x5c()
        let payload = Base64.encodeURL(Self.payload())
        for alg in ["none", "HS256", "RS256", "ES384", "es256"] {
            let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": x5c])
            let input = Base64.encodeURL(header) + "." + payload
            var signature = ""
            if alg == "HS256" {
                // The classic confusion attack: HMAC keyed with the (public) leaf key bytes.
                let key = SymmetricKey(data: chain.leafKey.publicKey.x963Representation)
                signature = Base64.encodeURL(HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: key))
            }
            #expect(await reason(input + "." + signature, roots: [chain.root]) == .unsupportedAlgorithm(alg))
        }
    }

    @Test("a tampered payload or header is refused")
    func tampering() async throws {
        let chain = try SigningChain(now: Self.signedAt)
        let jws = try chain.sign(payload: Self.payload())
        let parts = jws.split(separator: ".").map(String.init)
        let forgedPayload = Base64.encodeURL(Self.payload(bundleID: "com.studio.game").map { $0 == UInt8(ascii: "6") ? UInt8(ascii: "7") : $0 })
        #expect(await reason([parts[0], forgedPayload, parts[2]].joined(separator: "."), roots: [chain.root]) == .badSignature)
        // A header re-encoded with an extra field keeps the x5c but changes the signed bytes.
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": try chain.x5c(), "kid": "x"])
        #expect(await reason([Base64.encodeURL(header), parts[1], parts[2]].joined(separator: "."), roots: [chain.root]) == .badSignature)
        // A signature two bytes short (valid base64url, wrong length for ES256).
        let short = Base64.encodeURL(try #require(Base64.decodeURL(parts[2])).dropLast(2))
        #expect(await reason([parts[0], parts[1], short].joined(separator: "."), roots: [chain.root]) == .badSignature)
        // A signature cut mid-symbol is not even base64url.
        guard case .malformedJWS? = await reason([parts[0], parts[1], String(parts[2].dropLast(1))].joined(separator: "."), roots: [chain.root])
        else {
            Issue.record("a cut signature was not refused as malformed")
            return
        }
    }

    @Test("a header the verifier has seen vouches for nothing: under it, a forged payload or a foreign chain's signature is refused")
    func knownHeaderIsNoShortcut() async throws {
        let chain = try SigningChain(now: Self.signedAt)
        let verifier = SignedDataVerifier(trustedRoots: [chain.root])
        func reason(_ jws: String) async -> VerificationError.Reason? {
            do {
                _ = try await verifier.verifyTransaction(jws, for: Self.app)
                return nil
            } catch {
                return error.reason
            }
        }
        let genuine = try chain.sign(payload: Self.payload())
        #expect(await reason(genuine) == nil)  // the header is now known
        let parts = genuine.split(separator: ".").map(String.init)
        let forgedPayload = Base64.encodeURL(Self.payload(bundleID: "com.studio.game").map { $0 == UInt8(ascii: "6") ? UInt8(ascii: "7") : $0 })
        #expect(await reason([parts[0], forgedPayload, parts[2]].joined(separator: ".")) == .badSignature)
        // A forger's own key, signing under the known header: the signature must be the leaf's.
        let forger = try SigningChain(now: Self.signedAt, name: "Forger")
        let forged = try PreparedSigner(headerSegment: parts[0], key: forger.leafKey).sign(payload: Self.payload())
        #expect(await reason(forged) == .badSignature)
        #expect(await reason(genuine) == nil)
    }

    @Test("chains of two or four certificates are refused")
    func chainLengths() async throws {
        let chain = try SigningChain(now: Self.signedAt)
        let x5c = try chain.x5c()
        for entries in [Array(x5c.prefix(2)), x5c + [x5c[2]], [String]()] {
            let jws = try SigningChain.sign(payload: Self.payload(), header: ["alg": "ES256", "x5c": entries], key: chain.leafKey)
            #expect(await reason(jws, roots: [chain.root]) == .wrongChainLength(entries.count))
        }
    }

    @Test("a leaf or intermediate without Apple's marker, or with the markers swapped, is refused")
    func appleMarkers() async throws {
        var noLeafMarker = SigningChain.Variant()
        noLeafMarker.leafHasAppleMarker = false
        var noIntermediateMarker = SigningChain.Variant()
        noIntermediateMarker.intermediateHasAppleMarker = false
        var swapped = SigningChain.Variant()
        swapped.markersSwapped = true
        for (variant, certificate) in [(noLeafMarker, "leaf"), (noIntermediateMarker, "intermediate"), (swapped, "leaf")] {
            let chain = try SigningChain(variant: variant, now: Self.signedAt)
            guard case .missingAppleExtension(let which, _)? = await reason(try chain.sign(payload: Self.payload()), roots: [chain.root])
            else {
                Issue.record("a chain without the \(certificate) marker was trusted")
                continue
            }
            #expect(which == certificate)
        }
    }

    @Test("a leaf expired, or not yet valid, at signedDate is refused; validity is judged at signedDate, not now")
    func validityAtSigningTime() async throws {
        var expired = SigningChain.Variant()
        expired.leafValidity = (-86_400 * 10)...(-86_400)
        let old = try SigningChain(variant: expired, now: Self.signedAt)
        guard case .certificateNotValidAtSigningTime("leaf", _, _, _)? = await reason(try old.sign(payload: Self.payload()), roots: [old.root])
        else {
            Issue.record("an expired leaf was trusted")
            return
        }

        var future = SigningChain.Variant()
        future.leafValidity = 86_400...(86_400 * 10)
        let early = try SigningChain(variant: future, now: Self.signedAt)
        guard case .certificateNotValidAtSigningTime("leaf", _, _, _)? = await reason(try early.sign(payload: Self.payload()), roots: [early.root])
        else {
            Issue.record("a not-yet-valid leaf was trusted")
            return
        }

        // Signed while the leaf was valid, verified years later: accepted, as Apple's libraries do.
        let chain = try SigningChain(now: Self.signedAt)
        #expect(await reason(try chain.sign(payload: Self.payload()), roots: [chain.root]) == nil)
    }

    @Test("a well-signed payload for another bundle, or sandbox where production is expected, is refused")
    func wrongApp() async throws {
        let chain = try SigningChain(now: Self.signedAt)
        let otherBundle = try chain.sign(payload: Self.payload(bundleID: "com.other.game"))
        #expect(await reason(otherBundle, roots: [chain.root]) == .bundleMismatch(expected: "com.studio.game", actual: "com.other.game"))
        let sandbox = try chain.sign(payload: Self.payload(environment: "Sandbox"))
        #expect(await reason(sandbox, roots: [chain.root]) == .environmentMismatch(expected: "Production", actual: "Sandbox"))
    }

    @Test("a self-signed leaf, a chain signed by another intermediate, and garbage are refused")
    func selfSignedAndGarbage() async throws {
        let chain = try SigningChain(now: Self.signedAt)
        let other = try SigningChain(now: Self.signedAt)
        // Our leaf presented with another chain's intermediate: the leaf's issuer signature does not match.
        let mixed = try SigningChain.sign(
            payload: Self.payload(), header: ["alg": "ES256", "x5c": [try chain.x5c()[0], try other.x5c()[1], try other.x5c()[2]]],
            key: chain.leafKey)
        guard case .untrustedChain? = await reason(mixed, roots: [other.root]) else {
            Issue.record("mixed chain trusted")
            return
        }
        // A self-signed "root" presented as leaf and intermediate.
        let selfSigned = try SigningChain.sign(
            payload: Self.payload(), header: ["alg": "ES256", "x5c": [try other.x5c()[2], try other.x5c()[2], try other.x5c()[2]]],
            key: other.rootKey)
        #expect(await reason(selfSigned, roots: [other.root]) != nil)
        for garbage in ["", "a.b", "a.b.c.d", "!!!.???.***", String(repeating: "A", count: 70_000)] {
            guard case .malformedJWS? = await reason(garbage, roots: [chain.root]) else {
                Issue.record("garbage \(garbage.prefix(20)) not refused as malformed")
                continue
            }
        }
        let hugeX5C = try SigningChain.sign(
            payload: Self.payload(), header: ["alg": "ES256", "x5c": [String(repeating: "A", count: 9000), "B", "C"]],
            key: chain.leafKey)
        guard case .invalidCertificate? = await reason(hugeX5C, roots: [chain.root]) else {
            Issue.record("huge x5c")
            return
        }
    }

    @Test("Apple's own test chains with wrong OIDs are refused; the correct one is accepted with its key")
    func appleTestChains() async throws {
        let root = try Certificate(derEncoded: Array(try AppleVectors.data("certs/test-root-ca.der")))
        func x5c(_ leaf: String, _ intermediate: String) throws -> [String] {
            try [leaf, intermediate, "certs/test-root-ca.der"].map { Base64.encodeStandard(try AppleVectors.data($0)) }
        }
        let effective = Date(timeIntervalSince1970: 1_761_962_975)
        let verifier = SignedDataVerifier(trustedRoots: [root], clock: { effective })
        // No private key for these certificates: any signature fails, but only after the chain is judged.
        func outcome(_ chain: [String]) async -> VerificationError.Reason? {
            let payload = Base64.encodeURL(Array(#"{"bundleId":"com.example"}"#.utf8))
            let header = Base64.encodeURL((try? JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": chain])) ?? Data())
            do {
                _ = try await verifier.verifySignature(header + "." + payload + "." + Base64.encodeURL([UInt8](repeating: 1, count: 64)))
                return nil
            } catch { return error.reason }
        }
        #expect(await outcome(try x5c("certs/test-leaf.der", "certs/test-intermediate-ca.der")) == .badSignature)
        guard case .missingAppleExtension("leaf", _)? = await outcome(try x5c("certs/test-leaf-invalid-oid.der", "certs/test-intermediate-ca.der"))
        else {
            Issue.record("leaf with OID 6.11.2 accepted")
            return
        }
        guard
            case .missingAppleExtension("intermediate", _)? = await outcome(
                try x5c("certs/test-leaf-for-intermediate-ca-invalid-oid.der", "certs/test-intermediate-ca-invalid-oid.der"))
        else {
            Issue.record("intermediate with OID 6.2.2 accepted")
            return
        }
    }
}
