import SwiftASN1
import X509

/// Apple's marker extensions on App Store signing chains.
enum AppleOIDs {
    /// On the leaf: Mac App Store and iTunes Store receipt signing.
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    /// On the intermediate: Apple Worldwide Developer Relations.
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
}

/// The chain must be (leaf, intermediate, root) with Apple's markers on the first two: a valid chain to
/// Apple's root is not enough, it must be one Apple uses for App Store data.
struct AppleOIDPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "the chain to the root has \(chain.count) certificates, expected 3")
        }
        guard chain[0].extensions[oid: AppleOIDs.leafMarker] != nil else {
            return .failsToMeetPolicy(reason: "the leaf lacks extension \(AppleOIDs.leafMarker)")
        }
        guard chain[1].extensions[oid: AppleOIDs.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks extension \(AppleOIDs.intermediateMarker)")
        }
        return .meetsPolicy
    }
}
