import AppStore
import Foundation

/// The App Store Server API endpoints the simulator serves.
enum Route {
    case transactionInfo(id: String)
    case transactionHistory(id: String)
    case refundHistory(id: String)
    case notificationHistory
    case lookUpOrderID(orderID: String)
    case sendConsumptionInformation(id: String)

    init?(method: String, path: Substring) {
        func tail(_ prefix: String) -> String? {
            guard path.hasPrefix(prefix) else { return nil }
            let rest = path.dropFirst(prefix.count)
            guard !rest.isEmpty, !rest.contains("/") else { return nil }
            return SimulatorRequest.percentDecode(rest)
        }
        switch method {
        case "GET":
            if let id = tail("/inApps/v1/transactions/") {
                self = .transactionInfo(id: id)
            } else if let id = tail("/inApps/v2/history/") {
                self = .transactionHistory(id: id)
            } else if let id = tail("/inApps/v2/refund/lookup/") {
                self = .refundHistory(id: id)
            } else if let id = tail("/inApps/v1/lookup/") {
                self = .lookUpOrderID(orderID: id)
            } else {
                return nil
            }
        case "POST" where path == "/inApps/v1/notifications/history":
            self = .notificationHistory
        case "PUT":
            guard let id = tail("/inApps/v2/transactions/consumption/") else { return nil }
            self = .sendConsumptionInformation(id: id)
        default:
            return nil
        }
    }

    /// The rate-limit bucket and stats name.
    var endpoint: String {
        switch self {
        case .transactionInfo: "transactionInfo"
        case .transactionHistory: "transactionHistory"
        case .refundHistory: "refundHistory"
        case .notificationHistory: "notificationHistory"
        case .lookUpOrderID: "lookUpOrderID"
        case .sendConsumptionInformation: "sendConsumptionInformation"
        }
    }

    static let pageSize = 20

    /// Apple's error answer, thrown by a handler that cannot go on.
    struct Refusal: Error {
        let reply: SimulatorReply
    }

    func answer(
        _ simulator: Simulator, request: SimulatorRequest, bundleID: String, environment: String, world: World, now: Date,
        sign: ([UInt8]) -> String
    ) -> SimulatorReply {
        do {
            return try route(simulator, request: request, bundleID: bundleID, environment: environment, world: world, now: now, sign: sign)
        } catch {
            return error.reply
        }
    }

    /// The customer's transactions for any of their transaction ids, or Apple's answer for a malformed
    /// (4000006) or unknown (4040010) id.
    static func customerTransactions(of id: String, bundleID: String, environment: String, world: World) throws(Refusal)
        -> [TransactionRecord]
    {
        guard isValidTransactionID(id) else { throw Refusal(reply: .appleError(400, 4_000_006, "Invalid transaction id.")) }
        guard let records = world.customerTransactions(of: id, bundleID: bundleID, environment: environment) else {
            throw Refusal(reply: .appleError(404, 4_040_010, "Transaction id not found."))
        }
        return records
    }

    private func route(
        _ simulator: Simulator, request: SimulatorRequest, bundleID: String, environment: String, world: World, now: Date,
        sign: ([UInt8]) -> String
    ) throws(Refusal) -> SimulatorReply {
        switch self {
        case .transactionInfo(let id):
            let records = try Self.customerTransactions(of: id, bundleID: bundleID, environment: environment, world: world)
            guard let record = records.first(where: { $0.transactionId == id }) else {
                throw Refusal(reply: .appleError(404, 4_040_010, "Transaction id not found."))
            }
            return .json(200, Self.object(field: "signedTransactionInfo", string: sign(SignedPayloads.transaction(record, at: now))))

        case .transactionHistory(let id):
            return try Self.history(id, request: request, bundleID: bundleID, environment: environment, world: world, now: now, sign: sign)

        case .refundHistory(let id):
            return try Self.refunds(id, request: request, bundleID: bundleID, environment: environment, world: world, now: now, sign: sign)

        case .notificationHistory:
            return Self.notifications(
                simulator, request: request, bundleID: bundleID, environment: environment, world: world,
                now: now, sign: sign)

        case .sendConsumptionInformation(let id):
            return ConsumptionRoute.answer(simulator, id: id, request: request, bundleID: bundleID, environment: environment, world: world, now: now)

        case .lookUpOrderID(let orderID):
            // Apple has no sandbox for this endpoint.
            guard environment == "Production" else { return .respond(status: 404, headers: [], body: []) }
            let records = world.transactions(forOrder: orderID, bundleID: bundleID)
            guard !records.isEmpty else { return .json(200, Array(#"{"status":1}"#.utf8)) }
            let signed = records.map { sign(SignedPayloads.transaction($0, at: now)) }
            return .json(200, Self.object(["status": 0, "signedTransactions": signed]))
        }
    }

    static func isValidTransactionID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    /// `{"<field>":"<string>"}`, written directly: JSONSerialization's string escaping of a 5 KB JWS was a
    /// tenth of the simulator's time per answer. Escapes what JSON requires (a hostile JWS may hold anything).
    static func object(field: String, string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(field.utf8.count + string.utf8.count + 8)
        bytes += #"{""#.utf8
        bytes += field.utf8
        bytes += #"":""#.utf8
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), byte]
            case 0..<0x20: bytes += Array(String(format: "\\u%04x", byte).utf8)
            default: bytes.append(byte)
            }
        }
        bytes += #""}"#.utf8
        return bytes
    }

    static func object(_ value: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// Get Transaction History v2: the customer's transactions in any state, filtered, 20 a page.
    static func history(
        _ id: String, request: SimulatorRequest, bundleID: String, environment: String, world: World, now: Date,
        sign: ([UInt8]) -> String
    ) throws(Refusal) -> SimulatorReply {
        var records = try customerTransactions(of: id, bundleID: bundleID, environment: environment, world: world)
        var start: Int64?
        var end: Int64?
        if let text = request.queryValues("startDate").first {
            guard let value = Int64(text) else {
                return .appleError(400, 4_000_015, "Invalid request. The start date is not a timestamp value represented in milliseconds.")
            }
            start = value
        }
        if let text = request.queryValues("endDate").first {
            guard let value = Int64(text) else {
                return .appleError(400, 4_000_016, "Invalid request. The end date is not a timestamp value represented in milliseconds.")
            }
            end = value
        }
        let typeNames = [
            "AUTO_RENEWABLE": "Auto-Renewable Subscription", "NON_RENEWABLE": "Non-Renewing Subscription",
            "CONSUMABLE": "Consumable", "NON_CONSUMABLE": "Non-Consumable",
        ]
        let types = request.queryValues("productType")
        guard types.allSatisfy({ typeNames[$0] != nil }) else {
            return .appleError(400, 4_000_022, "Invalid request. The product type parameter is invalid.")
        }
        let products = request.queryValues("productId")
        var revoked: Bool?
        if let text = request.queryValues("revoked").first {
            // Apple documents true/false; Apple's Python library sends True/False.
            switch text.lowercased() {
            case "true": revoked = true
            case "false": revoked = false
            default: return .appleError(400, 4_000_030, "Invalid request. The revoked parameter is invalid.")
            }
        }
        records = records.filter { record in
            let purchased = record.purchaseDate.appleMilliseconds
            return (start.map { purchased >= $0 } ?? true) && (end.map { purchased < $0 } ?? true)
                && (types.isEmpty || types.contains { typeNames[$0] == record.type })
                && (products.isEmpty || products.contains(record.productId))
                && (revoked.map { ($0) == (record.refund?.isActive(at: now) ?? false) } ?? true)
        }
        if request.queryValues("sort").first == "DESCENDING" { records.reverse() }
        let offset: Int
        if let revision = request.queryValues("revision").first {
            guard let decoded = PageToken.decode(revision, prefix: "h"), let value = Int(decoded), value >= 0 else {
                return .appleError(400, 4_000_005, "Invalid request revision.")
            }
            offset = value
        } else {
            offset = 0
        }
        let page = records.dropFirst(offset).prefix(pageSize)
        let next = offset + page.count
        let app = world.apps[bundleID]
        return .json(
            200,
            object([
                "revision": PageToken.encode(String(next), prefix: "h"), "hasMore": next < records.count, "bundleId": bundleID,
                "appAppleId": app?.appAppleId ?? 0, "environment": environment,
                "signedTransactions": page.map { sign(SignedPayloads.transaction($0, at: now)) },
            ]))
    }

    /// Get Refund History v2: the customer's refunded transactions in revocation-date order, 20 a page; the
    /// revision names the last one returned, so a stored revision gives only newer refunds.
    static func refunds(
        _ id: String, request: SimulatorRequest, bundleID: String, environment: String, world: World, now: Date,
        sign: ([UInt8]) -> String
    ) throws(Refusal) -> SimulatorReply {
        let records = try customerTransactions(of: id, bundleID: bundleID, environment: environment, world: world)
        let refunded = records.filter { $0.refund?.isActive(at: now) ?? false }
            .sorted { ($0.refund?.date ?? .distantPast, $0.transactionId) < ($1.refund?.date ?? .distantPast, $1.transactionId) }
        var remaining = refunded[...]
        var lastKey = "0:"
        if let revision = request.queryValues("revision").first {
            guard let decoded = PageToken.decode(revision, prefix: "r"), let colon = decoded.firstIndex(of: ":"),
                let milliseconds = Int64(decoded[..<colon])
            else { return .appleError(400, 4_000_005, "Invalid request revision.") }
            let transactionID = String(decoded[decoded.index(after: colon)...])
            lastKey = decoded
            remaining = refunded.drop { record in
                let date = record.refund?.date.appleMilliseconds ?? 0
                return (date, record.transactionId) <= (milliseconds, transactionID)
            }
        }
        let page = remaining.prefix(pageSize)
        if let last = page.last { lastKey = "\(last.refund?.date.appleMilliseconds ?? 0):\(last.transactionId)" }
        return .json(
            200,
            object([
                "signedTransactions": page.map { sign(SignedPayloads.transaction($0, at: now)) },
                "revision": PageToken.encode(lastKey, prefix: "r"), "hasMore": remaining.count > page.count,
            ]))
    }

    struct NotificationHistoryBody: Decodable {
        let startDate: Int64?
        let endDate: Int64?
        let notificationType: String?
        let notificationSubtype: String?
        let transactionId: String?
        let originalTransactionId: String?
        let onlyFailures: Bool?
    }

    /// Get Notification History: the app's REFUND, REVOKE, REFUND_REVERSED, CONSUMPTION_REQUEST and
    /// REFUND_DECLINED notifications in [start, end), 20 a page.
    static func notifications(
        _ simulator: Simulator, request: SimulatorRequest, bundleID: String, environment: String, world: World, now: Date,
        sign: ([UInt8]) -> String
    ) -> SimulatorReply {
        guard let body = try? JSONDecoder().decode(NotificationHistoryBody.self, from: Data(request.body)) else {
            return .appleError(400, 4_000_000, "Bad request.")
        }
        guard let start = body.startDate else {
            return .appleError(400, 4_000_015, "Invalid request. The start date is not a timestamp value represented in milliseconds.")
        }
        guard let requestedEnd = body.endDate else {
            return .appleError(400, 4_000_016, "Invalid request. The end date is not a timestamp value represented in milliseconds.")
        }
        guard start < requestedEnd else {
            return .appleError(400, 4_000_013, "Invalid request. The end date precedes the start date or the dates are the same.")
        }
        let days =
            environment == "Sandbox"
            ? simulator.configuration.notificationHistoryDays.sandbox : simulator.configuration.notificationHistoryDays.production
        guard start >= (now - days * 86_400).appleMilliseconds else {
            return .appleError(400, 4_000_012, "Invalid request. The start date is earlier than the allowed start date.")
        }
        let transactionFilter = body.transactionId ?? body.originalTransactionId
        if transactionFilter != nil && body.notificationType != nil {
            return .appleError(400, 4_000_019, "Invalid request. Supply either a transaction id or a notification type, but not both.")
        }
        if let type = body.notificationType,
            ![
                "REFUND", "REFUND_REVERSED", "REFUND_DECLINED", "CONSUMPTION_REQUEST", "SUBSCRIBED",
                "DID_RENEW", "ONE_TIME_CHARGE", "REVOKE", "TEST", "EXPIRED", "DID_CHANGE_RENEWAL_STATUS",
            ].contains(type)
        {
            return .appleError(400, 4_000_018, "Invalid request. The notification type or subtype is invalid.")
        }
        var customer: Set<String>?
        if let id = transactionFilter {
            guard let records = world.customerTransactions(of: id, bundleID: bundleID, environment: environment) else {
                return .appleError(404, 4_040_010, "Transaction id not found.")
            }
            customer = Set(records.map(\.transactionId))
        }
        let end = min(requestedEnd, now.appleMilliseconds)  // a future end means now
        let events = world.refundEvents(bundleID: bundleID, environment: environment).filter { event in
            let date = event.date.appleMilliseconds
            return date >= start && date < end && (body.notificationType.map { $0 == event.kind.rawValue } ?? true)
                && (customer.map { $0.contains(event.transactionID) } ?? true) && body.onlyFailures != true
        }
        var fingerprint = StableHash()
        for byte in request.body { fingerprint.combine(byte) }
        let offset: Int
        if let token = request.queryValues("paginationToken").first {
            guard let decoded = PageToken.decode(token, prefix: "n"), let colon = decoded.firstIndex(of: ":"),
                let value = Int(decoded[..<colon]), value >= 0, decoded[decoded.index(after: colon)...] == String(fingerprint.value)
            else { return .appleError(400, 4_000_014, "Invalid request. The pagination token is invalid.") }
            offset = value
        } else {
            offset = 0
        }
        let page = events.dropFirst(offset).prefix(pageSize)
        let app = world.apps[bundleID]
        let items: [[String: Any]] = page.compactMap { event in
            guard let record = world.transactions[event.transactionID] else { return nil }
            // The transaction as it was when the notification was sent.
            let state = event.kind == .reversal ? event.date + 0.001 : event.date
            let transaction = sign(SignedPayloads.transaction(record, at: state, signedAt: event.date))
            let payload = SignedPayloads.notification(event, record: record, app: app, signedTransaction: transaction)
            return [
                "signedPayload": sign(payload),
                "sendAttempts": [["attemptDate": event.date.appleMilliseconds, "sendAttemptResult": "SUCCESS"]],
            ]
        }
        let next = offset + page.count
        var answer: [String: Any] = ["notificationHistory": items, "hasMore": next < events.count]
        answer["paginationToken"] = PageToken.encode("\(next):\(fingerprint.value)", prefix: "n")
        return .json(200, object(answer))
    }
}

/// Opaque paging tokens (base64url of a kind letter and a position).
enum PageToken {
    static func encode(_ position: String, prefix: String) -> String { Base64.encodeURL(Array((prefix + position).utf8)) }

    static func decode(_ token: String, prefix: String) -> String? {
        guard let bytes = Base64.decodeURL(token) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix(prefix) else { return nil }
        return String(text.dropFirst(prefix.count))
    }
}
