import Foundation

/// What the simulator does wrong on purpose. Shares are fractions of requests (0 to 1), drawn per request
/// from a hash of the seed, the request and how many times it was asked before: the same world, seed and
/// requests give the same faults whatever the order or concurrency.
public struct FaultPlan: Sendable, Codable, Equatable {
    /// Added to every answer, with a uniform jitter of ± `jitterMilliseconds`.
    public var latencyMilliseconds: Int = 0
    public var jitterMilliseconds: Int = 0
    /// HTTP 500 with 5000000 GeneralInternalError.
    public var internalErrorShare: Double = 0
    /// HTTP 500 with 5000001 GeneralInternalRetryableError.
    public var retryableErrorShare: Double = 0
    /// The connection is reset (RST) instead of answered.
    public var resetShare: Double = 0
    /// The body is cut halfway while Content-Length announces all of it, then the connection closes.
    public var truncatedShare: Double = 0
    /// A 200 whose body is not JSON.
    public var malformedShare: Double = 0
    /// A 200 whose signed data is hostile (see `hostileKind`).
    public var hostileShare: Double = 0
    /// Which hostile signed data: tampered, wrongRoot, algNone, hs256, shortChain, longChain, noLeafOID,
    /// noIntermediateOID, swappedOIDs, expiredLeaf, notYetValidLeaf, selfSignedLeaf, hugeX5C, otherBundle,
    /// otherEnvironment.
    public var hostileKind: String = "tampered"
    /// The answer comes after `stallSeconds` (a hung server, for the client's timeout).
    public var stallShare: Double = 0
    public var stallSeconds: Double = 30
    /// Every request for these bundles gets 401.
    public var unauthorizedBundles: [String] = []
    /// Every request to these environments ("Production", "Sandbox") gets 401: keys that one environment
    /// refuses, as when an app was never released to production.
    public var unauthorizedEnvironments: [String] = []
    /// 429 with Retry-After for `rateLimitBurstMilliseconds` out of every `rateLimitBurstEverySeconds`.
    public var rateLimitBurstEverySeconds: Double = 0
    public var rateLimitBurstMilliseconds: Int = 0
    public var seed: UInt64 = 1

    public init() {}

    public static let none = FaultPlan()

    /// Every kind of hostile signed data the simulator can serve.
    public static var hostileKinds: [String] { HostileSigner.kinds }

    var injectsAnything: Bool {
        latencyMilliseconds > 0 || internalErrorShare > 0 || retryableErrorShare > 0 || resetShare > 0 || truncatedShare > 0
            || malformedShare > 0 || hostileShare > 0 || stallShare > 0 || !unauthorizedBundles.isEmpty || !unauthorizedEnvironments.isEmpty
            || rateLimitBurstEverySeconds > 0
    }

    /// The fault for a request whose position in [0, 1) is `draw`.
    func fault(for draw: Double) -> Fault? {
        var threshold = 0.0
        for (share, fault) in [
            (internalErrorShare, Fault.internalError), (retryableErrorShare, .retryableError), (resetShare, .reset),
            (truncatedShare, .truncated), (malformedShare, .malformed), (hostileShare, .hostile), (stallShare, .stall),
        ] {
            threshold += share
            if draw < threshold { return fault }
        }
        return nil
    }

    enum Fault: String, CaseIterable {
        case internalError, retryableError, reset, truncated, malformed, hostile, stall, unauthorized, rateLimitBurst, rateLimit
    }
}
