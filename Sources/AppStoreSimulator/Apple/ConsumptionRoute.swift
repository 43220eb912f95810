import Foundation

/// Send Consumption Information (v2): `PUT /inApps/v2/transactions/consumption/{transactionId}`.
///
/// Checked as Apple documents the body (DOC: ConsumptionRequest, consumptionPercentage, the endpoint's 400
/// list), with Apple's error codes where Apple publishes their numbers. For three documented errors Apple
/// publishes no number (ConsumptionPercentageOutOfRangeError, UndeliveredConsumptionPercentageNonZeroError,
/// and a GRANT_PRORATED percentage of 0 or 100000, for which no error is named): the simulator answers
/// those with HTTP 400 and an `errorMessage` but no `errorCode`, rather than invent numbers. Accepted
/// answers get 202 with no body and are recorded (`GET /simulator/consumption-answers`).
enum ConsumptionRoute {
    static func answer(_ simulator: Simulator, id: String, request: SimulatorRequest, bundleID: String, environment: String, world: World, now: Date)
        -> SimulatorReply
    {
        guard Route.isValidTransactionID(id) else { return .appleError(400, 4_000_006, "Invalid transaction id.") }
        guard let record = world.transaction(id, bundleID: bundleID, environment: environment) else {
            return .appleError(404, 4_040_010, "Transaction id not found.")
        }
        switch validate(request.body, productType: record.type) {
        case .failure(let refusal): return refusal.reply
        case .success(let body):
            simulator.record(
                ReceivedConsumptionAnswer(
                    transactionId: id, bundleId: bundleID, environment: environment, receivedAt: now, body: body,
                    raw: String(decoding: request.body, as: UTF8.self), solicited: isOpen(record.refundRequest, at: now),
                    late: record.refundRequest.map { now > $0.date + 12 * 3600 } ?? false))
            return .respond(status: 202, headers: [], body: [])
        }
    }

    static func isOpen(_ request: RefundRequestRecord?, at now: Date) -> Bool {
        guard let request else { return false }
        return request.date <= now && request.decision == nil
    }

    struct Refusal: Error {
        let reply: SimulatorReply

        static func apple(_ code: Int64, _ message: String) -> Refusal { Refusal(reply: .appleError(400, code, message)) }

        /// A documented error whose number Apple does not publish.
        static func unnumbered(_ message: String) -> Refusal {
            Refusal(reply: .json(400, Route.object(["errorMessage": message])))
        }

        /// "If there's no error code, the request is malformed."
        static let malformed = Refusal(reply: .respond(status: 400, headers: [], body: []))
    }

    /// A JSON value as it was written: JSONDecoder never reads `1` as a boolean nor `true` as a number.
    enum Field: Decodable {
        case boolean(Bool)
        case number(Double)
        case text(String)
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) {
                self = .boolean(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .text(value)
            } else {
                self = .other
            }
        }
    }

    static func validate(_ bytes: [UInt8], productType: String) -> Result<ReceivedConsumptionAnswer.Body, Refusal> {
        guard let object = try? JSONDecoder().decode([String: Field].self, from: Data(bytes)) else { return .failure(.malformed) }
        func boolean(_ key: String) -> Bool? {
            guard case .boolean(let value)? = object[key] else { return nil }
            return value
        }
        guard boolean("customerConsented") == true else {
            return .failure(
                .apple(4_000_035, "Invalid request. The customer consented field is required and must indicate the customer consented."))
        }
        let statuses = ["DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"]
        guard case .text(let delivery)? = object["deliveryStatus"], statuses.contains(delivery) else {
            return .failure(.apple(4_000_036, "Invalid request. The delivery status field is invalid."))
        }
        guard let sample = boolean("sampleContentProvided") else {
            return .failure(.apple(4_000_041, "Invalid request. The sample content provided field is invalid."))
        }
        var preference: String?
        if let value = object["refundPreference"] {
            guard case .text(let text) = value, ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(text) else {
                return .failure(.apple(4_000_044, "Invalid request. The refund preference field is invalid."))
            }
            preference = text
        }
        var percentage: Int32?
        if let value = object["consumptionPercentage"] {
            guard case .number(let number) = value, number == number.rounded(), abs(number) < 1e9 else { return .failure(.malformed) }
            guard productType != "Auto-Renewable Subscription" else {
                return .failure(
                    .apple(
                        4_000_209, "Invalid request. The consumption percentage field is not supported for auto-renewable subscription transactions.")
                )
            }
            let milli = Int32(number)
            guard (0...100_000).contains(milli) else { return .failure(.unnumbered("Invalid request. The consumption percentage is out of range.")) }
            guard delivery == "DELIVERED" || milli == 0 else {
                return .failure(.unnumbered("Invalid request. The consumption percentage must be zero for the provided delivery status."))
            }
            percentage = milli
        }
        // Apple's pages agree that a GRANT_PRORATED percentage lies strictly between 0 and 100000; whether one
        // may be left out for a consumable they do not agree ("need to provide" against "may include"), so
        // the simulator refuses only a percentage outside that range.
        if preference == "GRANT_PRORATED", let percentage, !(percentage > 0 && percentage < 100_000) {
            return .failure(.unnumbered("Invalid request. GRANT_PRORATED needs a consumption percentage greater than 0 and less than 100000."))
        }
        return .success(
            .init(
                customerConsented: true, consumptionPercentage: percentage, deliveryStatus: delivery, refundPreference: preference,
                sampleContentProvided: sample))
    }
}
