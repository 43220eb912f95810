public import AppStore
import Foundation
public import HTTP
public import Job
public import Logging
import SwiftASN1
import X509

/// Builds the Apple side of a run from the configuration: one HTTP client, one rate limiter shared by
/// every app (its buckets are per app), a Server API client per app with its own key, and the verifier.
public enum AppleAppsFactory {
    static let endpointNames: [String: AppStoreEndpoint] = [
        "transaction_info": .transactionInfo, "transaction_history": .transactionHistory, "refund_history": .refundHistory,
        "notification_history": .notificationHistory, "look_up_order_id": .lookUpOrderID,
        "send_consumption_information": .sendConsumptionInformation,
    ]

    public static func make(
        _ configuration: ClawbackConfiguration, shardCount: Int, http: HTTPClient, logger: Logger
    ) throws(ConfigurationErrors) -> AppleApps {
        var errors: [ConfigurationError] = []
        var overrides: [AppStoreEndpoint: Double] = [:]
        for (name, rate) in configuration.apple.rateLimits { if let endpoint = endpointNames[name] { overrides[endpoint] = rate } }
        let limiter = RateLimiter(rates: .init(overrides: overrides, shardCount: shardCount))
        let server = server(configuration)
        var clients: [String: AppStoreServerAPIClient] = [:]
        var secrets: [String: String] = [:]
        for (index, app) in configuration.apps.enumerated() {
            do {
                clients[app.bundleID] = try client(for: app, server: server, http: http, limiter: limiter, logger: logger)
            } catch {
                errors.append(ConfigurationError(field: "apps[\(index)].key_file", problem: error.description))
            }
            if let path = app.sharedSecretFile {
                do {
                    secrets[app.bundleID] = try SecretFile.read(path)
                } catch {
                    errors.append(ConfigurationError(field: "apps[\(index)].shared_secret_file", problem: error.description))
                }
            }
        }
        var roots: [Certificate] = []
        for (index, path) in configuration.apple.trustedRoots.enumerated() {
            do {
                roots.append(try certificate(at: path))
            } catch {
                errors.append(ConfigurationError(field: "apple.trusted_roots[\(index)]", problem: "cannot read a certificate from \(path)"))
            }
        }
        guard errors.isEmpty else { throw ConfigurationErrors(errors: errors) }
        let receipts = VerifyReceiptClient(
            http: http, productionURL: configuration.apple.verifyReceiptProductionURL, sandboxURL: configuration.apple.verifyReceiptSandboxURL)
        return AppleApps(
            clients: clients, verifier: SignedDataVerifier(trustedRoots: roots.isEmpty ? [AppleRootCertificates.rootCAG3] : roots),
            receiptClient: receipts, sharedSecrets: secrets,
            appAppleIDs: Dictionary(configuration.apps.compactMap { app in app.appAppleID.map { (app.bundleID, $0) } }) { first, _ in first })
    }
}

extension AppleAppsFactory {
    /// The HTTP client every Apple call of a command goes through: the configuration's timeout and extra CA.
    public static func httpClient(_ configuration: ClawbackConfiguration, maxConcurrentRequests: Int) throws(HTTPClients.StartFailure)
        -> HTTPClient
    {
        try HTTPClients.start(
            for: "the App Store", timeout: .milliseconds(Int64(configuration.apple.timeoutSeconds * 1000)),
            extraCABundlePath: configuration.apple.extraCAFile, maxConcurrentRequests: maxConcurrentRequests)
    }

    /// A certificate from a PEM or DER file.
    static func certificate(at path: String) throws -> Certificate {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let text = String(decoding: data, as: UTF8.self)
        return text.contains("BEGIN CERTIFICATE") ? try Certificate(pemEncoded: text) : try Certificate(derEncoded: Array(data))
    }

    /// The Server API endpoints of the configuration (Apple's, or the simulator's).
    public static func server(_ configuration: ClawbackConfiguration) -> AppStoreServerConfiguration {
        AppStoreServerConfiguration(baseURLs: [.production: configuration.apple.productionURL, .sandbox: configuration.apple.sandboxURL])
    }

    /// One app's Server API client, with the app's own key (refused when unreadable, malformed, or
    /// readable by others).
    public static func client(
        for app: ClawbackConfiguration.App, server: AppStoreServerConfiguration, http: HTTPClient, limiter: RateLimiter, logger: Logger
    ) throws(CredentialError) -> AppStoreServerAPIClient {
        let key = try SigningKey.load(path: app.keyFile)
        let credentials = AppStoreCredentials(issuerID: app.issuerID, keyID: app.keyID, bundleID: app.bundleID, key: key)
        return AppStoreServerAPIClient(
            http: http, tokens: BearerTokenProvider(credentials: credentials), limiter: limiter, configuration: server, logger: logger)
    }
}
