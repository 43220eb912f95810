import Foundation
import Job
import Storage

/// What clawback answers a Stripe dispute with, from the game's facts (docs/stripe.md, "Disputes answered"):
/// - a purchase the game delivered: its evidence, staged then submitted once before `due_by`:
///   `product_description` (what was bought, for which player account, delivered when), `service_date` (the
///   delivery's day), `access_activity_log` (the share the player consumed, from the studio's
///   `clawback.units_consumed` hook, and the latest uses from `clawback.usage_events`, oldest first) and
///   `uncategorized_text` (where these facts come from);
/// - a purchase the game has no grant of: left, since nothing shows it was delivered (the studio refunds or
///   accepts it in the Dashboard: clawback never accepts a dispute);
/// - a dispute whose issuer allows no response (`due_by` absent or 0), or whose deadline is nearer than
///   `deadlineMargin`: left.
enum StripeDisputeEvidence {
    /// A submission is not started this close to `due_by`: the calls and their retries end before it.
    static let deadlineMargin: TimeInterval = 10 * 60
    /// Stripe takes at most 20,000 characters in a text field of the evidence; counted here in UTF-16 code
    /// units, never fewer than Stripe's characters, less a margin.
    static let fieldLimit = 19_000
    /// One use's description at most, so that no single use fills the log.
    static let useLimit = 200

    enum Decision: Equatable {
        /// The evidence to stage and submit, as form fields in order.
        case answer([(String, String)])
        /// Not answered, and why.
        case leave(String)

        static func == (one: Decision, other: Decision) -> Bool {
            switch (one, other) {
            case (.answer(let a), .answer(let b)): a.map { [$0.0, $0.1] } == b.map { [$0.0, $0.1] }
            case (.leave(let a), .leave(let b)): a == b
            default: false
            }
        }
    }

    /// Whether `due_by` leaves time to answer at `now` (nil: it does).
    static func deadlineProblem(_ dueBy: Date?, now: Date) -> String? {
        guard let dueBy, dueBy.timeIntervalSince1970 > 0 else { return "the issuer allows no response (no due_by)" }
        guard dueBy.timeIntervalSince(now) > deadlineMargin else {
            return "too near its deadline (\(dueBy.formatted(.iso8601))) to submit before it"
        }
        return nil
    }

    static func decide(_ facts: DisputeFacts, shop: String) -> Decision {
        guard facts.delivered, let purchasedAt = facts.purchasedAt else {
            return .leave("no grant of this payment: the game cannot show it delivered anything, so there is nothing to contest")
        }
        let when = purchasedAt.formatted(.iso8601)
        let product = facts.productID ?? "the product"
        let units = facts.unitsGranted.map { "\($0) units of " } ?? ""
        let player = facts.playerID.map { " to player account \($0)" } ?? ""
        var log: [String] = []
        if let consumed = facts.unitsConsumed, let granted = facts.unitsGranted {
            log.append("Consumed by the player: \(consumed) of the \(granted) units delivered.")
        } else {
            log.append("How much of it the player consumed is not known.")
        }
        if !facts.uses.isEmpty {
            // The newest uses that fit, each on one line of its own (the studio's text cleaned of line breaks and
            // control characters, so no use can pass for another line), then shown oldest first.
            log.append("Uses of the purchase in the game, oldest first:")
            var budget = fieldLimit - log.joined(separator: "\n").utf16.count - 1
            var shown: [String] = []
            for use in facts.uses.reversed() {
                let line = "\(use.at.map { $0.formatted(.iso8601) } ?? "(time unknown)") \(oneLine(use.description ?? ""))"
                guard line.utf16.count + 1 <= budget else { break }
                budget -= line.utf16.count + 1
                shown.append(line)
            }
            log += shown.reversed()
        }
        return .answer([
            ("evidence[product_description]", limited("\(units)\(product) (virtual goods in \(shop)), delivered\(player) at \(when).")),
            ("evidence[service_date]", String(when.prefix(10))),
            ("evidence[access_activity_log]", limited(log.joined(separator: "\n"))),
            (
                "evidence[uncategorized_text]",
                limited(
                    "The purchase was delivered to the player's game account as soon as the payment succeeded (\(when)); these facts are the game's own records of the delivery and its use."
                )
            ),
        ])
    }

    /// `text` within `limit` UTF-16 code units, cut at a whole character and marked so.
    static func limited(_ text: String, to limit: Int = fieldLimit) -> String {
        guard text.utf16.count > limit else { return text }
        var kept = ""
        for character in text {
            guard kept.utf16.count + character.utf16.count < limit else { break }
            kept.append(character)
        }
        return kept + "…"
    }

    /// `text` on one line (line breaks and other control characters as spaces) within `useLimit`.
    static func oneLine(_ text: String) -> String {
        limited(String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 })), to: useLimit)
    }
}
