import AppStore
import Foundation

extension Simulator {
    /// Legacy /verifyReceipt: reads the receipt, answers 21007/21008 for the wrong environment, 21004 for a
    /// wrong shared secret, and lists the receipt's purchases Apple knows, with cancellation dates for
    /// refunded ones. Consumables are taken as finished (the game credited them), so, as at Apple, they are
    /// no longer in the receipt: verifyReceipt cannot see their refunds.
    func verifyReceipt(_ request: SimulatorRequest, environment: String) -> SimulatorReply {
        struct Body: Decodable {
            let receiptData: String?
            let password: String?
            enum CodingKeys: String, CodingKey {
                case receiptData = "receipt-data"
                case password
            }
        }
        func status(_ code: Int) -> SimulatorReply { .json(200, Array("{\"status\":\(code),\"environment\":\"\(environment)\"}".utf8)) }
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)), let data = body.receiptData,
            let receipt = try? ReceiptParser.parse(base64: data)
        else { return status(21002) }
        let world = self.world
        let now = self.now
        var bundleID: String?
        var receiptEnvironment = "Production"
        if case .appReceipt(let bundle, let type, _) = receipt {
            bundleID = bundle
            if type == "ProductionSandbox" || type == "Sandbox" { receiptEnvironment = "Sandbox" }
        }
        let known = receipt.transactionIDs.compactMap { world.transactions[$0] }
        if bundleID == nil { bundleID = known.first?.bundleId }
        if receiptEnvironment == "Production", let first = known.first { receiptEnvironment = first.environment }
        if environment == "Production" && receiptEnvironment == "Sandbox" { return status(21007) }
        if environment == "Sandbox" && receiptEnvironment == "Production" { return status(21008) }
        if let bundleID, let secret = world.apps[bundleID]?.sharedSecret, body.password != secret { return status(21004) }
        let entries: [[String: Any]] = known.filter { $0.type != "Consumable" }.map { record in
            var entry: [String: Any] = [
                "transaction_id": record.transactionId, "original_transaction_id": record.originalTransactionId,
                "product_id": record.productId, "quantity": String(record.quantity),
                "purchase_date_ms": String(record.purchaseDate.appleMilliseconds),
            ]
            if let refund = record.refund, refund.isActive(at: now) {
                entry["cancellation_date_ms"] = String(refund.date.appleMilliseconds)
                entry["cancellation_reason"] = String(refund.reason)
            }
            return entry
        }
        return .json(
            200,
            Route.object([
                "status": 0, "environment": environment,
                "receipt": ["bundle_id": bundleID ?? "", "in_app": entries] as [String: Any],
            ]))
    }
}
