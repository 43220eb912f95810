import AppStore
import Foundation
import HTTP
import Job
import Logging
import Storage
import X509

/// `clawback config check`'s App Store lines: the apps' shared secrets and trusted roots readable, each
/// app's key loads and Apple (or the simulator) accepts it. Nothing is changed.
enum AppStoreConfigurationCheck {
    typealias Line = ConfigurationCheck.Line

    static func lines(_ configuration: ClawbackConfiguration, logger: Logger) async -> [Line] {
        var lines: [Line] = []
        lines += files(configuration)
        guard !configuration.apps.isEmpty else { return lines }
        // Apple's own client: its timeout (at most 15 seconds here) and its extra CA (a simulator behind TLS).
        let own: HTTPClient
        do {
            own = try HTTPClients.start(
                for: "the App Store's checks", timeout: .seconds(min(15, Int64(configuration.apple.timeoutSeconds))),
                extraCABundlePath: configuration.apple.extraCAFile)
        } catch {
            return lines + [Line(item: "apple", status: .failed, detail: error.description)]
        }
        defer { own.shutdown() }
        lines += await apps(configuration, http: own, logger: logger)
        return lines
    }

    static func files(_ configuration: ClawbackConfiguration) -> [Line] {
        var lines: [Line] = []
        for (index, app) in configuration.apps.enumerated() {
            if let path = app.sharedSecretFile {
                do {
                    _ = try SecretFile.read(path)
                    lines.append(Line(item: "apps[\(index)].shared_secret_file", status: .ok, detail: "\(path) readable by its owner only"))
                } catch {
                    lines.append(Line(item: "apps[\(index)].shared_secret_file", status: .failed, detail: error.description))
                }
            }
        }
        for (index, path) in configuration.apple.trustedRoots.enumerated() {
            do {
                let root = try AppleAppsFactory.certificate(at: path)
                lines.append(
                    Line(
                        item: "apple.trusted_roots[\(index)]", status: .warning,
                        detail: "signed data is trusted to \(root.subject) INSTEAD of Apple Root CA - G3: for the simulator only"))
            } catch {
                lines.append(Line(item: "apple.trusted_roots[\(index)]", status: .failed, detail: "cannot read a certificate from \(path)"))
            }
        }
        if let path = configuration.apple.extraCAFile {
            let readable = FileManager.default.isReadableFile(atPath: path)
            lines.append(Line(item: "apple.extra_ca_file", status: readable ? .ok : .failed, detail: readable ? path : "cannot read \(path)"))
        }
        return lines
    }

    /// Per app: its key loads, and Apple (or the simulator) answers a cheap authenticated request. Asking
    /// for a transaction that cannot exist costs nothing: any answer but 401 proves the credentials.
    static func apps(_ configuration: ClawbackConfiguration, http: HTTPClient, logger: Logger) async -> [Line] {
        var lines: [Line] = []
        let limiter = RateLimiter(rates: .init(overrides: [:], shardCount: 1))
        let server = AppleAppsFactory.server(configuration)
        for (index, app) in configuration.apps.enumerated() {
            let client: AppStoreServerAPIClient
            do {
                client = try AppleAppsFactory.client(for: app, server: server, http: http, limiter: limiter, logger: logger)
                let mode = try? CredentialFile.permissions(of: app.keyFile).map { String($0, radix: 8) }.get()
                lines.append(Line(item: "apps[\(index)].key_file", status: .ok, detail: "\(app.keyFile): P-256 key, mode \(mode ?? "?")"))
            } catch {
                lines.append(Line(item: "apps[\(index)].key_file", status: .failed, detail: error.description))
                continue
            }
            let environment: AppStoreEnvironment = app.environment == "Sandbox" ? .sandbox : .production
            let item = "apps[\(index)] \(app.bundleID) (\(app.environment))"
            do {
                _ = try await client.transactionInfo("1", environment: environment)
                lines.append(Line(item: item, status: .ok, detail: "Apple answered with the app's key"))
            } catch {
                switch error.kind {
                case .apple(let status, let code, _):
                    lines.append(
                        Line(
                            item: item, status: .ok,
                            detail: "authenticated; Apple answered \(status)\(code.map { " \($0)" } ?? "") for a transaction that does not exist"))
                case .unauthorized:
                    lines.append(
                        Line(
                            item: item, status: .failed,
                            detail:
                                "401: Apple refused the token: check issuer_id, key_id, bundle_id and that the key is an In-App Purchase key of this app"
                        ))
                default:
                    lines.append(Line(item: item, status: .failed, detail: "\(error)"))
                }
            }
        }
        return lines
    }
}
