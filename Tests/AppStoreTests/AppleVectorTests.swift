import AppStore
import Crypto
import Foundation
import TestSupport
import Testing
import X509

@Suite("Apple's real and test vectors")
struct AppleVectorTests {
    static let realVectors = (try? AppleVectors.realVectors()) ?? []

    @Test("the embedded Apple Root CA - G3 is the published one")
    func embeddedRoot() throws {
        let digest = SHA256.hash(data: AppleRootCertificates.rootCAG3DER).map { String(format: "%02x", $0) }.joined()
        #expect(digest == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(AppleRootCertificates.rootCAG3DER == Array(try AppleVectors.data("certs/AppleRootCA-G3.der")))
        #expect("\(AppleRootCertificates.rootCAG3.subject)".contains("Apple Root CA - G3"))
    }

    @Test("the manifest lists all 75 real vectors")
    func manifestComplete() throws {
        #expect(try AppleVectors.realVectors().count == 75)
    }

    @Test(
        "every real Apple-signed vector verifies with the embedded root, at its signedDate",
        arguments: realVectors.map(\.file))
    func realVectorAccepted(file: String) async throws {
        let vector = try #require(Self.realVectors.first { $0.file == file })
        let jws = try AppleVectors.text(vector.file)
        let verifier = SignedDataVerifier()
        let environment = AppStoreEnvironment(rawValue: vector.environment)
        switch vector.kind {
        case "notification":
            let app = AppExpectation(bundleID: vector.contextBundleID, environment: environment, appAppleID: vector.appAppleID)
            let verified = try await verifier.verifyNotification(jws, for: app)
            #expect(verified.notification.signedDate?.appleMilliseconds == vector.signedDateMillis)
            #expect(verified.notification.data?.bundleID == vector.contextBundleID)
            #expect((verified.transaction != nil) == (verified.notification.data?.signedTransactionInfo != nil))
        case "transaction":
            let transaction = try await verifier.verifyTransaction(
                jws, for: AppExpectation(bundleID: vector.bundleID, environment: environment))
            #expect(transaction.bundleID == vector.bundleID)
            #expect(transaction.signedDate?.appleMilliseconds == vector.signedDateMillis)
            #expect(transaction.transactionID?.isEmpty == false)
        case "renewalInfo":
            let renewal = try await verifier.verifyRenewalInfo(jws, for: AppExpectation(environment: environment))
            #expect(renewal.environment == environment)
        default:
            Issue.record("unknown vector kind \(vector.kind)")
        }
    }

    @Test("the real revoked transactions decode their revocation fields")
    func revocations() async throws {
        let verifier = SignedDataVerifier()
        var revoked: [TransactionPayload] = []
        for vector in Self.realVectors where vector.kind == "transaction" {
            let transaction = try await verifier.verifyTransaction(try AppleVectors.text(vector.file), for: AppExpectation())
            if transaction.revocationDate != nil { revoked.append(transaction) }
        }
        #expect(revoked.count == 3)
        #expect(revoked.allSatisfy { $0.isRevoked && $0.revocationReasonValue != nil })
    }

    @Test("a real transaction without an environment is refused when an environment is expected")
    func noEnvironment() async throws {
        let jws = try AppleVectors.text(
            "negative/real-no-environment-transaction-com.tap4fun.bz.appstore-20000904312745-20211231T035140Z.jws")
        let verifier = SignedDataVerifier()
        _ = try await verifier.verifySignature(jws)  // signature and chain are fine
        for environment in [AppStoreEnvironment.sandbox, .production] {
            let error = await #expect(throws: VerificationError.self) {
                try await verifier.verifyTransaction(jws, for: AppExpectation(environment: environment))
            }
            #expect(error?.reason == .environmentMismatch(expected: environment.rawValue, actual: nil))
        }
    }

    @Test(
        "derived tampered vectors are refused for the right reason",
        arguments: [
            ("negative/derived-payload-tampered-transaction-com.wizzmo.app-2000001069194137.jws", "signature"),
            ("negative/derived-signature-tampered-transaction-com.wizzmo.app-2000001069194137.jws", "signature"),
            ("negative/derived-x5c-other-valid-leaf-transaction-com.loki-project.loki-messenger-2000001024998954.jws", "signature"),
            ("negative/derived-x5c-expired-leaf-transaction-com.wizzmo.app-2000001069194137.jws", "expired"),
        ])
    func negativeVectors(file: String, expected: String) async throws {
        let error = await #expect(throws: VerificationError.self) {
            try await SignedDataVerifier().verifyTransaction(try AppleVectors.text(file), for: AppExpectation())
        }
        switch (expected, error?.reason) {
        case ("signature", .badSignature?): break
        case ("expired", .certificateNotValidAtSigningTime(let certificate, _, let notAfter, let signedAt)?):
            #expect(certificate == "leaf")
            #expect(signedAt > notAfter)
        default: Issue.record("expected a \(expected) failure, got \(String(describing: error))")
        }
    }

    @Test("Apple's mock vectors verify with Apple's test CA as the only root")
    func mockVectors() async throws {
        let testCA = try Certificate(derEncoded: Array(try AppleVectors.data("certs/testCA.der")))
        let verifier = SignedDataVerifier(trustedRoots: [testCA])
        let app = AppExpectation(bundleID: "com.example", environment: .sandbox, appAppleID: 1234)
        let transaction = try await verifier.verifyTransaction(try AppleVectors.text("mock/transactionInfo"), for: app)
        #expect(transaction.bundleID == "com.example")
        let renewal = try await verifier.verifyRenewalInfo(try AppleVectors.text("mock/renewalInfo"), for: app)
        #expect(renewal.environment == .sandbox)
        let notification = try await verifier.verifyNotification(try AppleVectors.text("mock/testNotification"), for: app)
        #expect(notification.notification.notificationType == .test)

        // The same data is not trusted with Apple's production root.
        let production = await #expect(throws: VerificationError.self) {
            try await SignedDataVerifier().verifyTransaction(try AppleVectors.text("mock/transactionInfo"), for: app)
        }
        guard case .untrustedChain? = production?.reason else {
            Issue.record("expected untrustedChain, got \(String(describing: production))")
            return
        }
    }

    @Test("Apple's mock notification for another bundle, and one without x5c, are refused")
    func mockNegatives() async throws {
        let testCA = try Certificate(derEncoded: Array(try AppleVectors.data("certs/testCA.der")))
        let verifier = SignedDataVerifier(trustedRoots: [testCA])
        let app = AppExpectation(bundleID: "com.example", environment: .sandbox)
        let wrongBundle = await #expect(throws: VerificationError.self) {
            try await verifier.verifyNotification(try AppleVectors.text("mock/wrongBundleId"), for: app)
        }
        #expect(wrongBundle?.reason == .bundleMismatch(expected: "com.example", actual: "com.example.wrong"))
        let missing = await #expect(throws: VerificationError.self) {
            try await verifier.verifyNotification(try AppleVectors.text("mock/missingX5CHeaderClaim"), for: app)
        }
        #expect(missing?.reason == .wrongChainLength(0))
        // And the mock notification with another expected bundle.
        let otherApp = await #expect(throws: VerificationError.self) {
            try await verifier.verifyNotification(
                try AppleVectors.text("mock/testNotification"), for: AppExpectation(bundleID: "com.examplex"))
        }
        #expect(otherApp?.reason == .bundleMismatch(expected: "com.examplex", actual: "com.example"))
    }

    @Test("Xcode StoreKit-testing data is never trusted")
    func xcode() async throws {
        for file in ["xcode/xcode-signed-transaction", "xcode/xcode-signed-renewal-info", "xcode/xcode-signed-app-transaction"] {
            let error = await #expect(throws: VerificationError.self) {
                try await SignedDataVerifier().verifySignature(try AppleVectors.text(file))
            }
            #expect(error?.reason == .notSignedByAppStore, "\(file)")
        }
    }
}
