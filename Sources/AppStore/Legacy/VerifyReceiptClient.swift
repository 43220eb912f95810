import Foundation
public import HTTP

/// One `in_app` (or `latest_receipt_info`) entry of a verifyReceipt answer. Apple sends every value as a
/// string.
public struct VerifyReceiptInApp: Sendable, Decodable, Equatable {
    public let transactionID: String?
    public let originalTransactionID: String?
    public let productID: String?
    public let quantity: String?
    public let purchaseDateMilliseconds: String?
    /// Present only for refunded or revoked purchases (Apple documents it for non-consumables and
    /// subscriptions only: finished consumables leave the receipt altogether).
    public let cancellationDateMilliseconds: String?
    /// "1": an issue within the app; "0": another reason.
    public let cancellationReason: String?

    enum CodingKeys: String, CodingKey {
        case transactionID = "transaction_id"
        case originalTransactionID = "original_transaction_id"
        case productID = "product_id"
        case quantity
        case purchaseDateMilliseconds = "purchase_date_ms"
        case cancellationDateMilliseconds = "cancellation_date_ms"
        case cancellationReason = "cancellation_reason"
    }
}

/// The parts of a verifyReceipt answer clawback reads.
public struct VerifyReceiptResponse: Sendable, Decodable, Equatable {
    public let status: Int
    public let environment: String?
    public let receipt: Receipt?
    public let latestReceiptInfo: [VerifyReceiptInApp]?
    /// 1: a temporary issue, retry; 0: do not. Only with statuses 21100-21199.
    public let isRetryable: Bool?

    public struct Receipt: Sendable, Decodable, Equatable {
        public let bundleID: String?
        public let inApp: [VerifyReceiptInApp]?

        enum CodingKeys: String, CodingKey {
            case bundleID = "bundle_id"
            case inApp = "in_app"
        }
    }

    enum CodingKeys: String, CodingKey {
        case status, environment, receipt
        case latestReceiptInfo = "latest_receipt_info"
        case isRetryable = "is_retryable"
        case isRetryableDashed = "is-retryable"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        status = try container.decode(Int.self, forKey: .status)
        environment = try container.decodeIfPresent(String.self, forKey: .environment)
        receipt = try container.decodeIfPresent(Receipt.self, forKey: .receipt)
        latestReceiptInfo = try container.decodeIfPresent([VerifyReceiptInApp].self, forKey: .latestReceiptInfo)
        // Apple documents is_retryable as a boolean; some writers spell it is-retryable or send 0/1.
        let flag =
            try?
            (container.decodeIfPresent(Bool.self, forKey: .isRetryable)
            ?? container.decodeIfPresent(Bool.self, forKey: .isRetryableDashed))
        let number =
            try?
            (container.decodeIfPresent(Int.self, forKey: .isRetryable)
            ?? container.decodeIfPresent(Int.self, forKey: .isRetryableDashed))
        isRetryable = flag ?? number.map { $0 != 0 }
    }

    /// Every in-app entry Apple returned (receipt and latest info), by transaction id.
    public var purchases: [String: VerifyReceiptInApp] {
        var result: [String: VerifyReceiptInApp] = [:]
        for entry in (receipt?.inApp ?? []) + (latestReceiptInfo ?? []) {
            if let id = entry.transactionID { result[id] = entry }
        }
        return result
    }
}

/// Why verifyReceipt gave no usable answer. Never carries the receipt or the shared secret.
public struct VerifyReceiptError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// Apple's status (21003 not authentic, 21004 shared secret mismatch, 21010 account gone, ...).
        case status(Int)
        case transport(HTTPError)
        case httpStatus(Int)
        case invalidResponse(String)
        case retriesExhausted(attempts: Int, lastStatus: Int?)
    }

    public let kind: Kind

    public var description: String {
        switch kind {
        case .status(let status): "verifyReceipt answered status \(status): \(VerifyReceiptClient.meaning(of: status))"
        case .transport(let error): "verifyReceipt: \(error)"
        case .httpStatus(let status): "verifyReceipt answered HTTP \(status)"
        case .invalidResponse(let detail): "verifyReceipt: unexpected response: \(detail)"
        case .retriesExhausted(let attempts, let status):
            "verifyReceipt: gave up after \(attempts) attempts" + (status.map { " (last status \($0))" } ?? "")
        }
    }
}

/// Apple's deprecated `verifyReceipt`, for grants that kept only a StoreKit 1 receipt: production first,
/// sandbox on 21007, production on 21008; retries the temporary statuses.
public final class VerifyReceiptClient: Sendable {
    public static let productionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public static let sandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"

    let http: HTTPClient
    let productionURL: String
    let sandboxURL: String
    let retry: RetryPolicy
    private let random: @Sendable () -> Double

    public init(
        http: HTTPClient, productionURL: String = productionURL, sandboxURL: String = sandboxURL, retry: RetryPolicy = .init(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.http = http
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.retry = retry
        self.random = random
    }

    /// Whether a status means "try again later".
    public static func isTemporary(_ status: Int, isRetryable: Bool?) -> Bool {
        switch status {
        case 21002, 21005, 21009: true
        case 21100...21199: isRetryable ?? true
        default: false
        }
    }

    public static func meaning(of status: Int) -> String {
        switch status {
        case 0: "valid"
        case 21000: "the request was not a POST"
        case 21002: "the receipt data was malformed, or a temporary issue"
        case 21003: "the receipt could not be authenticated"
        case 21004: "the shared secret does not match the account's"
        case 21005: "the receipt server was temporarily unable to provide the receipt"
        case 21006: "valid, but the subscription has expired"
        case 21007: "a sandbox receipt was sent to production"
        case 21008: "a production receipt was sent to the sandbox"
        case 21009: "internal data access error; try again later"
        case 21010: "the user account cannot be found or was deleted"
        case 21100...21199: "internal data access error"
        default: "unknown status"
        }
    }

    /// Verifies a base64 receipt. `sharedSecret` is the app's App Store Connect shared secret, if any.
    public func verify(receipt: String, sharedSecret: String?) async throws(VerifyReceiptError) -> VerifyReceiptResponse {
        var body: [String: String] = ["receipt-data": receipt]
        if let sharedSecret { body["password"] = sharedSecret }
        let payload: [UInt8]
        do { payload = Array(try JSONSerialization.data(withJSONObject: body)) } catch {
            throw VerifyReceiptError(kind: .invalidResponse("could not encode the request"))
        }
        var url = productionURL
        var hops = 0
        var attempt = 0
        var lastStatus: Int?
        while attempt < retry.maxAttempts {
            attempt += 1
            let response: HTTPResponse
            do {
                response = try await http.send(
                    HTTPRequest(method: .post, url: url, headers: ["Content-Type": "application/json"], body: payload))
            } catch let error as HTTPError {
                guard error.isTransient else { throw VerifyReceiptError(kind: .transport(error)) }
                await sleep(retry.backoff(afterAttempt: attempt, random: random()))
                continue
            } catch {
                throw VerifyReceiptError(kind: .invalidResponse("\(error)"))
            }
            guard response.status == 200 else {
                guard response.status >= 500 || response.status == 429 else { throw VerifyReceiptError(kind: .httpStatus(response.status)) }
                await sleep(retry.backoff(afterAttempt: attempt, random: random()))
                continue
            }
            let answer: VerifyReceiptResponse
            do { answer = try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(response.body)) } catch {
                throw VerifyReceiptError(kind: .invalidResponse("the body is not a verifyReceipt answer"))
            }
            lastStatus = answer.status
            switch answer.status {
            case 0: return answer
            case 21007 where url == productionURL && hops < 2:
                url = sandboxURL
                hops += 1
                attempt -= 1  // a redirect, not a failed attempt
            case 21008 where url == sandboxURL && hops < 2:
                url = productionURL
                hops += 1
                attempt -= 1
            case let status where Self.isTemporary(status, isRetryable: answer.isRetryable):
                await sleep(retry.backoff(afterAttempt: attempt, random: random()))
            default:
                throw VerifyReceiptError(kind: .status(answer.status))
            }
        }
        throw VerifyReceiptError(kind: .retriesExhausted(attempts: attempt, lastStatus: lastStatus))
    }

    private func sleep(_ delay: Duration) async { try? await Task.sleep(for: delay) }
}
