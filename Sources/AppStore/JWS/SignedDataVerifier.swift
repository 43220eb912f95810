import Crypto
public import Foundation
public import X509

/// What a verified payload must say about the app. `nil` fields are not checked (`clawback inspect`
/// without --bundle/--environment); the job always sets bundle and environment.
public struct AppExpectation: Sendable, Equatable {
    public var bundleID: String?
    public var environment: AppStoreEnvironment?
    /// Checked for production notifications only, as Apple's libraries do.
    public var appAppleID: Int64?

    public init(bundleID: String? = nil, environment: AppStoreEnvironment? = nil, appAppleID: Int64? = nil) {
        self.bundleID = bundleID
        self.environment = environment
        self.appAppleID = appAppleID
    }
}

/// A JWS whose signature and chain were verified; its payload is trusted, its meaning not yet checked.
public struct VerifiedJWS: Sendable {
    /// The payload's JSON bytes.
    public let payload: [UInt8]
    /// The instant the chain was validated at: the payload's signedDate, or the time of verification
    /// when the payload has none.
    public let validatedAt: Date
}

/// Verifies App Store signed data the way Apple's own libraries do, without their online (OCSP) mode:
/// ES256 only; `x5c` of exactly three certificates; leaf and intermediate chained to the configured roots
/// (never to `x5c[2]`), valid at the payload's signedDate, with Apple's marker extensions; the signature over
/// the leaf's key; then the app's bundle, environment and (production notifications) app Apple id.
///
/// Share one instance across a batch: validated chains are cached, so each JWS costs one ECDSA verification.
public final class SignedDataVerifier: Sendable {
    private let chains: ChainValidator
    private let headers = JWSHeaderCache()
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - trustedRoots: the roots to trust; Apple Root CA - G3 unless told otherwise (the simulator's root,
    ///     Apple's test CA).
    ///   - clock: the time used when a payload carries no signedDate.
    public init(
        trustedRoots: [Certificate] = [AppleRootCertificates.rootCAG3], clock: @escaping @Sendable () -> Date = Date.init
    ) {
        chains = ChainValidator(roots: trustedRoots)
        self.clock = clock
    }

    /// Signature and chain only.
    public func verifySignature(_ jws: String) async throws(VerificationError) -> VerifiedJWS {
        let parsed = try CompactJWS(jws, headers: headers)
        return try await verifySignature(parsed, at: Self.signedDate(of: parsed.payload) ?? clock())
    }

    /// Signature and chain, the chain judged at `validatedAt` (the payload's signedDate).
    private func verifySignature(_ parsed: CompactJWS, at validatedAt: Date) async throws(VerificationError) -> VerifiedJWS {
        guard let algorithm = parsed.header.alg else { throw VerificationError(.malformedJWS("the header has no alg")) }
        guard algorithm == "ES256" else { throw VerificationError(.unsupportedAlgorithm(algorithm)) }
        guard let x5c = parsed.header.x5c, !x5c.isEmpty else { throw VerificationError(.wrongChainLength(0)) }
        if x5c.count == 1, Self.environmentField(of: parsed.payload) == AppStoreEnvironment.xcode {
            throw VerificationError(.notSignedByAppStore)
        }
        let key = try await chains.leafKey(x5c: x5c, at: validatedAt)
        // Hashed where the bytes are (the signing input is most of the JWS: no copy).
        let digest =
            parsed.signingInput.withContiguousStorageIfAvailable { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
            ?? SHA256.hash(data: Array(parsed.signingInput))
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parsed.signature),
            key.isValidSignature(signature, for: digest)
        else { throw VerificationError(.badSignature) }
        return VerifiedJWS(payload: parsed.payload, validatedAt: validatedAt)
    }

    /// A signed transaction (`signedTransactionInfo`), checked against the app.
    public func verifyTransaction(_ jws: String, for app: AppExpectation) async throws(VerificationError)
        -> TransactionPayload
    {
        let transaction = try await verifyAndDecode(jws, as: TransactionPayload.self)
        try Self.check(bundleID: transaction.bundleID, environment: transaction.environment, against: app)
        return transaction
    }

    /// Signed renewal info; it carries no bundle id, so only the environment is checked (as Apple does).
    public func verifyRenewalInfo(_ jws: String, for app: AppExpectation) async throws(VerificationError)
        -> RenewalInfoPayload
    {
        let renewal = try await verifyAndDecode(jws, as: RenewalInfoPayload.self)
        try Self.check(bundleID: nil, environment: renewal.environment, against: AppExpectation(environment: app.environment))
        return renewal
    }

    /// A notification's `signedPayload`, checked against the app; its nested signed transaction and renewal
    /// info are verified too, so nothing unverified hides inside a verified notification.
    public func verifyNotification(_ jws: String, for app: AppExpectation) async throws(VerificationError)
        -> VerifiedNotification
    {
        let notification = try await verifyAndDecode(jws, as: NotificationPayload.self)
        let context = notification.appContext
        try Self.check(bundleID: context.bundleID, environment: context.environment, against: app)
        if let expected = app.appAppleID, context.environment == .production, context.appAppleID != expected {
            throw VerificationError(.appAppleIDMismatch(expected: expected, actual: context.appAppleID))
        }
        // The nested data must belong to the same app and environment as the notification around it.
        let nested = AppExpectation(
            bundleID: app.bundleID ?? context.bundleID, environment: app.environment ?? context.environment)
        let transaction = try await notification.data?.signedTransactionInfo.asyncMap { signed throws(VerificationError) in
            try await verifyTransaction(signed, for: nested)
        }
        let renewal = try await notification.data?.signedRenewalInfo.asyncMap { signed throws(VerificationError) in
            try await verifyRenewalInfo(signed, for: nested)
        }
        return VerifiedNotification(notification: notification, transaction: transaction, renewalInfo: renewal)
    }

    /// Verifies and decodes with one pass over the payload. The payload is decoded before the signature is
    /// checked, but until the signature verifies only its signedDate is used, to pick the instant at which
    /// the chain is judged (as Apple's libraries do). A payload that does not decode is verified first all
    /// the same, so a tampered one is reported as a bad signature, not as bad JSON.
    private func verifyAndDecode<T: SignedAtDate>(_ jws: String, as type: T.Type) async throws(VerificationError) -> T {
        let parsed = try CompactJWS(jws, headers: headers)
        let decoded = try? decodePayload(T.self, from: parsed.payload)
        let validatedAt = decoded.map { $0.signedDate ?? clock() } ?? Self.signedDate(of: parsed.payload) ?? clock()
        let verified = try await verifySignature(parsed, at: validatedAt)
        if let decoded { return decoded }
        return try decodePayload(T.self, from: verified.payload)
    }

    static func check(bundleID: String?, environment: AppStoreEnvironment?, against app: AppExpectation)
        throws(VerificationError)
    {
        if let expected = app.bundleID, bundleID != expected {
            throw VerificationError(.bundleMismatch(expected: expected, actual: bundleID))
        }
        if let expected = app.environment, environment != expected {
            throw VerificationError(.environmentMismatch(expected: expected.rawValue, actual: environment?.rawValue))
        }
    }

    private struct DatedPayload: Decodable {
        let signedDate: Double?
        let receiptCreationDate: Double?
        let environment: String?
        /// AppTransaction's name for the environment.
        let receiptType: String?
        let data: Nested?
        struct Nested: Decodable { let environment: String? }
    }

    /// The transaction id a notification's nested signed transaction names, read WITHOUT verifying either
    /// signature: only to choose whom to ask per transaction after the notification failed verification,
    /// never as a fact. Nil when it cannot be read.
    public static func unverifiedTransactionID(ofNotification jws: String) -> String? {
        guard let notification = try? CompactJWS(jws), let payload = try? decodePayload(NotificationPayload.self, from: notification.payload),
            let signed = payload.data?.signedTransactionInfo, let nested = try? CompactJWS(signed),
            let transaction = try? decodePayload(TransactionPayload.self, from: nested.payload)
        else { return nil }
        return transaction.transactionID
    }

    /// signedDate (AppTransaction: receiptCreationDate), read before the signature is checked only to pick
    /// the instant at which to validate the chain.
    static func signedDate(of payload: [UInt8]) -> Date? {
        guard let dated = try? JSONDecoder().decode(DatedPayload.self, from: Data(payload)) else { return nil }
        return (dated.signedDate ?? dated.receiptCreationDate).map { Date(timeIntervalSince1970: $0 / 1000) }
    }

    static func environmentField(of payload: [UInt8]) -> AppStoreEnvironment? {
        guard let dated = try? JSONDecoder().decode(DatedPayload.self, from: Data(payload)) else { return nil }
        return (dated.environment ?? dated.receiptType ?? dated.data?.environment).map(AppStoreEnvironment.init(rawValue:))
    }
}

/// Signed data that says when it was signed: the instant its certificate chain is judged at.
protocol SignedAtDate: Decodable {
    var signedDate: Date? { get }
}

extension TransactionPayload: SignedAtDate {}
extension RenewalInfoPayload: SignedAtDate {}
extension NotificationPayload: SignedAtDate {}

/// A verified notification with its verified nested transaction and renewal info.
public struct VerifiedNotification: Sendable {
    public let notification: NotificationPayload
    public let transaction: TransactionPayload?
    public let renewalInfo: RenewalInfoPayload?
}

extension Optional {
    func asyncMap<T, E: Error>(_ transform: (Wrapped) async throws(E) -> T) async throws(E) -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
