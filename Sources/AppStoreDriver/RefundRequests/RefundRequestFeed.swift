public import AppStore
public import Foundation
import Job
public import Logging
public import Storage

/// Reads one app's notification history (one environment) for what concerns refund requests: the
/// CONSUMPTION_REQUEST notifications, and Apple's decisions (REFUND, REFUND_DECLINED) to join to them.
/// Every notification and its nested transaction is verified with the job's verifier; one that fails is
/// never acted on, and makes the feed not whole, so its cursor stays and the next run reads it again.
public struct RefundRequestFeed: Sendable {
    public static let types: [NotificationType] = [.consumptionRequest, .refund, .refundDeclined]

    public struct Result: Sendable {
        public var requests: [RefundRequestNotice] = []
        public var decisions: [RefundDecisionNotice] = []
        public var notifications = 0
        public var rejected = 0
        /// Every page of every type was read and every notification verified.
        public var whole = true
    }

    let client: AppStoreServerAPIClient
    let verifier: SignedDataVerifier
    let expectation: AppExpectation
    let logger: Logger

    public init(client: AppStoreServerAPIClient, verifier: SignedDataVerifier, expectation: AppExpectation, logger: Logger) {
        self.client = client
        self.verifier = verifier
        self.expectation = expectation
        self.logger = logger
    }

    public func read(from start: Date, to end: Date) async -> Result {
        var result = Result()
        guard let environment = expectation.environment else {
            result.whole = false
            return result
        }
        for type in Self.types {
            let request = NotificationHistoryRequest(startDate: start.appleMilliseconds, endDate: end.appleMilliseconds, notificationType: type)
            do {
                try await client.notificationHistory(request, environment: environment) { items in
                    for item in items {
                        switch await absorb(item, type: type) {
                        case .request(let notice):
                            result.notifications += 1
                            result.requests.append(notice)
                        case .decision(let notice):
                            result.notifications += 1
                            result.decisions.append(notice)
                        case .rejected:
                            result.rejected += 1
                            result.whole = false
                        }
                    }
                }
            } catch {
                result.whole = false
                logger.warning(
                    "a refund-request feed could not be read whole; it is read again by the next run",
                    metadata: [
                        "bundle": "\(client.bundleID)", "environment": "\(environment.rawValue)", "type": "\(type.rawValue)",
                        "error": "\(error)",
                    ])
            }
        }
        return result
    }

    enum Absorbed {
        case request(RefundRequestNotice)
        case decision(RefundDecisionNotice)
        case rejected
    }

    private func absorb(_ item: NotificationHistoryItem, type: NotificationType) async -> Absorbed {
        do {
            let verified = try await verifier.verifyNotification(item.signedPayload, for: expectation)
            let notification = verified.notification
            guard notification.notificationType == type else {
                throw VerificationError(
                    .invalidPayload("a \(type.rawValue) feed returned a \(notification.notificationType?.rawValue ?? "typeless") notification"))
            }
            guard let transaction = verified.transaction, let transactionID = transaction.transactionID, let signedDate = notification.signedDate,
                let uuidText = notification.notificationUUID, let uuid = UUID(uuidString: uuidText),
                let bundleID = expectation.bundleID, let environment = expectation.environment
            else { throw VerificationError(.invalidPayload("the notification lacks its transaction, signedDate or notificationUUID")) }
            switch type {
            case .consumptionRequest:
                return .request(
                    RefundRequestNotice(
                        notificationUUID: uuid, bundleID: bundleID, environment: environment.rawValue, transactionID: transactionID,
                        originalTransactionID: transaction.originalTransactionID, productID: transaction.productID,
                        productType: transaction.type?.rawValue, purchasedAt: transaction.purchaseDate,
                        reason: notification.data?.consumptionRequestReason, requestedAt: signedDate))
            default:
                return .decision(
                    RefundDecisionNotice(
                        notificationUUID: uuid, bundleID: bundleID, environment: environment.rawValue, transactionID: transactionID,
                        decision: type == .refund ? .refunded : .declined, decidedAt: signedDate))
            }
        } catch {
            logger.warning(
                "a notification failed verification and is not acted on; its feed is read again by the next run",
                metadata: [
                    "error": "\(error)", "bundle": "\(expectation.bundleID ?? "?")", "type": "\(type.rawValue)",
                    "transaction": "\(SignedDataVerifier.unverifiedTransactionID(ofNotification: item.signedPayload) ?? "unreadable")",
                ])
            return .rejected
        }
    }
}
