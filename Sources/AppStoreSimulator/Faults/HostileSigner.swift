import AppStore
import Crypto
import Foundation
import Locking

/// Signs payloads in the ways a forger or a broken signer would. Variants that test one rule (a missing
/// OID, an expired leaf) are issued by the simulator's real root key, so they fail for that rule and not
/// merely for an unknown root.
final class HostileSigner: Sendable {
    private let chain: SigningChain
    private let variants = Locked<[String: SigningChain]>([:])

    init(chain: SigningChain) { self.chain = chain }

    static let kinds = [
        "tampered", "wrongRoot", "algNone", "hs256", "shortChain", "longChain", "noLeafOID", "noIntermediateOID",
        "swappedOIDs", "expiredLeaf", "notYetValidLeaf", "selfSignedLeaf", "hugeX5C", "otherBundle", "otherEnvironment",
    ]

    func sign(_ payload: [UInt8], kind: String) -> String {
        (try? make(payload, kind: kind)) ?? "not.a.jws"
    }

    private func make(_ payload: [UInt8], kind: String) throws -> String {
        switch kind {
        case "wrongRoot":
            return try variant("wrongRoot") { try SigningChain(name: "Forger") }.sign(payload: payload)
        case "algNone":
            let header = try JSONSerialization.data(withJSONObject: ["alg": "none", "x5c": try chain.x5c()])
            return Base64.encodeURL(header) + "." + Base64.encodeURL(payload) + "."
        case "hs256":
            let header = try JSONSerialization.data(withJSONObject: ["alg": "HS256", "x5c": try chain.x5c()])
            let input = Base64.encodeURL(header) + "." + Base64.encodeURL(payload)
            let key = SymmetricKey(data: chain.leafKey.publicKey.x963Representation)
            return input + "." + Base64.encodeURL(HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: key))
        case "shortChain":
            return try SigningChain.sign(payload: payload, header: ["alg": "ES256", "x5c": Array(try chain.x5c().prefix(2))], key: chain.leafKey)
        case "longChain":
            let x5c = try chain.x5c()
            return try SigningChain.sign(payload: payload, header: ["alg": "ES256", "x5c": x5c + [x5c[2]]], key: chain.leafKey)
        case "hugeX5C":
            // A 20 KB "certificate": within the JWS size limit, far over the certificate limit.
            let x5c = try chain.x5c()
            let huge = String(repeating: "QUFB", count: 5_000)
            return try SigningChain.sign(payload: payload, header: ["alg": "ES256", "x5c": [huge, x5c[1], x5c[2]]], key: chain.leafKey)
        case "noLeafOID", "noIntermediateOID", "swappedOIDs", "expiredLeaf", "notYetValidLeaf", "selfSignedLeaf":
            let signer = try variant(kind) { [chain] in
                var variant = SigningChain.Variant()
                switch kind {
                case "noLeafOID": variant.leafHasAppleMarker = false
                case "noIntermediateOID": variant.intermediateHasAppleMarker = false
                case "swappedOIDs": variant.markersSwapped = true
                case "notYetValidLeaf": variant.leafValidity = (86_400 * 10)...(86_400 * 400)
                case "selfSignedLeaf": variant.leafSelfSigned = true
                default: variant.leafValidity = (-86_400 * 800)...(-86_400 * 400)
                }
                return try SigningChain(
                    rootKey: chain.rootKey, intermediateKey: chain.intermediateKey, leafKey: P256.Signing.PrivateKey(),
                    variant: variant, name: "clawback App Store Simulator")
            }
            return try signer.sign(payload: payload)
        case "otherBundle", "otherEnvironment":
            guard var object = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else {
                return try chain.sign(payload: payload)
            }
            if kind == "otherBundle" {
                object["bundleId"] = "com.hostile.other"
            } else {
                object["environment"] = (object["environment"] as? String) == "Sandbox" ? "Production" : "Sandbox"
            }
            return try chain.sign(payload: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        default:  // "tampered": validly signed, then the payload is changed
            let jws = try chain.sign(payload: payload)
            let parts = jws.split(separator: ".").map(String.init)
            var changed = payload
            if let index = changed.firstIndex(where: { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "8") }) { changed[index] += 1 }
            return parts[0] + "." + Base64.encodeURL(changed) + "." + parts[2]
        }
    }

    private func variant(_ name: String, _ make: () throws -> SigningChain) throws -> SigningChain {
        if let existing = variants.withLock({ $0[name] }) { return existing }
        let created = try make()
        variants.withLock { $0[name] = created }
        return created
    }
}
