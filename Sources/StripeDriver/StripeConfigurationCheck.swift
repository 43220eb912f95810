import Foundation
import HTTP
import Job
import Stripe

/// `clawback config check`'s Stripe lines: the key file readable and private, the key a restricted one of
/// live mode, each list the runs read allowed to it (one item of each), and the disputes' evidence it may
/// post (probed on a dispute no payment has, changing nothing).
enum StripeConfigurationCheck {
    /// What the runs read, with the restricted key's permission each needs (docs/stripe.md).
    static let reads: [(path: String, permission: String)] = [
        ("/v1/charges", "Charges: Read"), ("/v1/refunds", "Refunds: Read"), ("/v1/disputes", "Disputes: Read"),
        ("/v1/payment_intents", "PaymentIntents: Read"), ("/v1/events", "Events: Read"),
    ]

    static func lines(_ settings: StripeSettings, http: HTTPClient) async -> [ConfigurationCheck.Line] {
        guard let keyFile = settings.apiKeyFile else { return [] }
        let key: String
        do {
            key = try SecretFile.text(keyFile, field: "stripe.api_key_file").trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            return [ConfigurationCheck.Line(item: "stripe.api_key_file", status: .failed, detail: "\(error)")]
        }
        var lines: [ConfigurationCheck.Line] = []
        if key.hasPrefix("sk_") {
            lines.append(
                .init(
                    item: "stripe.api_key_file", status: .warning,
                    detail:
                        "a secret key can refund and close disputes: give clawback a restricted key (rk_…) that reads and writes only disputes' evidence"
                ))
        } else if !key.hasPrefix("rk_") {
            lines.append(.init(item: "stripe.api_key_file", status: .failed, detail: "not a Stripe key (rk_live_… or rk_test_…)"))
            return lines
        }
        if key.contains("_test_") {
            lines.append(.init(item: "stripe.api_key_file", status: .warning, detail: "a test-mode key: it reads test payments, not the shop's"))
        }
        let client = StripeClient(key: key, baseURL: settings.apiURL, http: http, retries: 0)
        for read in reads {
            do {
                try await client.list(StripeAnyObject.self, read.path, query: [], pages: 1) { _ in }
                lines.append(.init(item: "stripe \(read.path)", status: .ok, detail: "readable"))
            } catch {
                let detail: String
                switch error.kind {
                case .refused(401, _, _): detail = "Stripe refused the key (401): \(error)"
                case .refused(403, _, _): detail = "the key lacks \(read.permission) (403): \(error)"
                default: detail = "\(error)"
                }
                lines.append(.init(item: "stripe \(read.path)", status: .failed, detail: detail))
            }
        }
        lines.append(await answering(client))
        lines.append(await fraudWarnings(client, reviewed: settings.earlyFraudWarnings == .review))
        return lines
    }

    /// Whether the key may read Radar's early fraud warnings, which `clawback stripe disputes` keeps for
    /// finance: a `warn` when not, since the disputes are answered all the same; a `FAIL` when the runs review
    /// warned payments (`early_fraud_warnings: review`), since they cannot conclude without the warnings.
    static func fraudWarnings(_ client: StripeClient, reviewed: Bool) async -> ConfigurationCheck.Line {
        let item = "stripe /v1/radar/early_fraud_warnings"
        do {
            try await client.list(StripeAnyObject.self, "/v1/radar/early_fraud_warnings", query: [], pages: 1) { _ in }
            return .init(item: item, status: .ok, detail: "readable")
        } catch {
            if case .refused(403, _, _) = error.kind, reviewed {
                return .init(
                    item: item, status: .failed,
                    detail: "the key lacks Early fraud warnings: Read, which stripe.early_fraud_warnings: review needs: every Stripe run fails")
            }
            if case .refused(403, _, _) = error.kind {
                return .init(
                    item: item, status: .warning,
                    detail: "the key lacks Early fraud warnings: Read: finance's reports will not show them; disputes are answered all the same")
            }
            return .init(item: item, status: .failed, detail: "\(error)")
        }
    }

    /// Whether the key may post a dispute's evidence (`clawback stripe disputes`): a POST to a dispute that
    /// cannot exist, which Stripe answers 404 when the key is allowed and 403 when it lacks the permission.
    static func answering(_ client: StripeClient) async -> ConfigurationCheck.Line {
        let item = "stripe /v1/disputes answering"
        do {
            _ = try await client.post(
                StripeAnyObject.self, "/v1/disputes/dp_clawback_config_check", form: [("submit", "false")], idempotencyKey: "clawback-config-check")
            return .init(item: item, status: .failed, detail: "a dispute that cannot exist was found: is api_url Stripe's?")
        } catch {
            switch error.kind {
            case .refused(404, _, _):
                return .init(item: item, status: .ok, detail: "the key may post a dispute's evidence (a dispute no payment has was looked up)")
            case .refused(403, _, _):
                return .init(
                    item: item, status: .warning,
                    detail: "the key lacks Disputes: Write: clawback stripe disputes cannot answer (exit 78); the runs are not affected")
            default: return .init(item: item, status: .failed, detail: "\(error)")
            }
        }
    }
}
