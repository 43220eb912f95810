public import Foundation

/// A dispute's evidence as Stripe takes it (`POST /v1/disputes/{id}`, form-encoded `evidence[field]` and
/// `submit`, true by default) and a dispute accepted (`POST /v1/disputes/{id}/close`). A request under an
/// Idempotency-Key already used is answered with the first answer, or refused when its form differs (Stripe's
/// `idempotency_error`); a request refused as invalid is not stored under its key, as Stripe stores none
/// that fails validation. Evidence is taken while the dispute awaits a response, in the fields Stripe's spec
/// names, each text at most 20,000 characters; what Stripe answers otherwise is not in its spec, so the
/// simulator refuses it as an invalid request.
extension StripeSimulator {
    func post(_ request: SimulatorRequest, parts: [String]) -> SimulatorReply {
        let form = Self.form(request.body)
        let key = request.header("Idempotency-Key")
        let signature = form.map { "\($0.0)=\($0.1)" } + [parts.joined(separator: "/")]
        if let key, let done = idempotent.withLock({ $0[key] }) {
            stats.count(endpoint: "stripe.idempotent_replay")
            guard done.form == signature else {
                return Self.error(
                    400, type: "idempotency_error", code: nil,
                    message: "Keys for idempotent requests can only be used with the same parameters they were first used with.")
            }
            return done.reply
        }
        let reply: SimulatorReply
        switch (parts.count, parts.last) {
        case (2, _): reply = evidence(parts[1], form: form)
        case (3, "close"): reply = close(parts[1])
        default: return Self.error(404, type: "invalid_request_error", code: nil, message: "Unrecognized request URL (POST: \(request.path)).")
        }
        if let key, !reply.isClientError { idempotent.withLock { $0[key] = (signature, reply) } }
        return reply
    }

    private func evidence(_ id: String, form: [(String, String)]) -> SimulatorReply {
        stats.count(endpoint: "stripe.disputes.update")
        let submit = form.last { $0.0 == "submit" }.map { $0.1 != "false" } ?? true
        return changeDispute(id) { dispute in
            guard ["needs_response", "warning_needs_response"].contains(dispute.status) else {
                return Self.error(
                    400, type: "invalid_request_error", code: nil, message: "This dispute is \(dispute.status): it takes no evidence now.")
            }
            for (name, value) in form where name.hasPrefix("evidence[") && name.hasSuffix("]") {
                let field = String(name.dropFirst(9).dropLast())
                guard Self.evidenceTextFields.contains(field) else {
                    return Self.error(
                        400, type: "invalid_request_error", code: "parameter_unknown", message: "Received unknown parameter: \(name)", param: name)
                }
                guard value.utf16.count <= 20_000 else {
                    return Self.error(400, type: "invalid_request_error", code: nil, message: "\(name) is longer than 20000 characters", param: name)
                }
                dispute.evidence = (dispute.evidence ?? [:]).merging([String(name.dropFirst(9).dropLast()): value]) { $1 }
            }
            if submit {
                stats.count(endpoint: "stripe.disputes.submit")
                dispute.submissionCount = (dispute.submissionCount ?? 0) + 1
                dispute.status = dispute.status == "needs_response" ? "under_review" : "warning_under_review"
            }
            return nil
        }
    }

    private func close(_ id: String) -> SimulatorReply {
        stats.count(endpoint: "stripe.disputes.close")
        return changeDispute(id) { dispute in
            dispute.closedByMerchant = true
            dispute.status = dispute.status.hasPrefix("warning_") ? "warning_closed" : "lost"
            return nil
        }
    }

    /// The issuer escalating the inquiry `id` (a `warning_…` dispute) to a chargeback: the same dispute, now
    /// `needs_response` with a new `due_by`, the amount and its fee withdrawn, and a `charge.dispute.updated`
    /// event at `moment`. Stripe does not say whether the chargeback's `submission_count` (and the evidence)
    /// starts again, so `resettingSubmissions` chooses. False when there is no such inquiry.
    @discardableResult
    public func escalate(_ id: String, dueBy: Date, at moment: Date, resettingSubmissions: Bool) -> Bool {
        var escalated = false
        update { world in
            for (paymentID, payment) in world.payments {
                guard let index = payment.disputes.firstIndex(where: { $0.id == id && $0.status.hasPrefix("warning_") }) else { continue }
                var dispute = payment.disputes[index]
                dispute.status = "needs_response"
                dispute.dueBy = dueBy
                dispute.escalatedAt = moment
                if resettingSubmissions {
                    dispute.submissionCount = 0
                    dispute.evidence = nil
                }
                world.payments[paymentID]?.disputes[index] = dispute
                escalated = true
                return
            }
        }
        return escalated
    }

    /// Changes the dispute `id` by `change` (which may refuse with a reply) and answers it as it now is.
    private func changeDispute(_ id: String, _ change: (inout StripeDisputeRecord) -> SimulatorReply?) -> SimulatorReply {
        var refused: SimulatorReply?
        var answer: [String: Any]?
        update { world in
            for (paymentID, payment) in world.payments {
                guard let index = payment.disputes.firstIndex(where: { $0.id == id }) else { continue }
                var dispute = payment.disputes[index]
                if let refusal = change(&dispute) {
                    refused = refusal
                    return
                }
                world.payments[paymentID]?.disputes[index] = dispute
                answer = Self.dispute(dispute, charge: dispute.charge ?? payment.latestCharge?.id, of: payment)
                return
            }
        }
        if let refused { return refused }
        guard let answer else { return Self.missing("dispute", id, param: "dispute") }
        return Self.json(answer)
    }

    /// The evidence's text fields (Stripe's `dispute_evidence_params`; its file fields take file ids).
    static let evidenceTextFields: Set<String> = [
        "access_activity_log", "billing_address", "cancellation_policy_disclosure", "cancellation_rebuttal", "customer_email_address",
        "customer_name", "customer_purchase_ip", "duplicate_charge_explanation", "duplicate_charge_id", "product_description",
        "refund_policy_disclosure", "refund_refusal_explanation", "service_date", "shipping_address", "shipping_carrier", "shipping_date",
        "shipping_tracking_number", "uncategorized_text",
    ]

    /// A form-encoded body's fields, in order, decoded.
    static func form(_ body: [UInt8]) -> [(String, String)] {
        String(decoding: body, as: UTF8.self).split(separator: "&").map { field in
            let pair = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring?) -> String {
                SimulatorRequest.percentDecode(Substring((text ?? "").replacingOccurrences(of: "+", with: " ")))
            }
            return (decoded(pair.first), decoded(pair.count > 1 ? pair[1] : nil))
        }
    }
}

extension SimulatorReply {
    /// A 4xx answer: a request Stripe refused before doing anything, so nothing it stores under its key.
    var isClientError: Bool {
        switch self {
        case .respond(let status, _, _), .truncated(let status, _, _): (400..<500).contains(status)
        case .reset: false
        case .delayed(_, let reply): reply.isClientError
        }
    }
}
