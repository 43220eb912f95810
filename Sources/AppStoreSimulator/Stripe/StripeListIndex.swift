import Foundation

/// The simulator's Stripe lists, each sorted once per world rather than per page: a monthly run over a
/// million payments reads ten thousand pages of charges, and sorting the world for each made the
/// simulator, not clawback, the benchmark's subject. An entry keeps what a list's filters and paging read
/// and where its object lives in the world; the object's JSON is built from the world as it is when a page
/// is served, so a dispute's evidence or status changed since the index was built is answered as it now is.
struct StripeListIndex {
    /// Where an entry's object lives in its payment.
    enum Source {
        case paymentIntent
        case charge(Int)
        case refund(Int)
        case dispute(Int)
        case fraudWarning(Int)
    }

    struct Entry {
        let id: String
        /// `created` in whole seconds, as Stripe gives it and compares its `created[…]` bounds.
        let created: Int64
        let charge: String?
        let paymentIntent: String
        let source: Source
        /// An event's type and the object it carries (nil: not an event).
        let event: String?
    }

    /// One list: newest first, ties by id (so that paging is stable), with its entries' positions.
    struct Sorted {
        let entries: [Entry]
        let position: [String: Int]
        /// Positions by `charge` and by `payment_intent`, for the lists filtered by them.
        let byCharge: [String: [Int]]
        let byPaymentIntent: [String: [Int]]

        init(_ unsorted: [Entry]) {
            entries = unsorted.sorted { ($0.created, $0.id) > ($1.created, $1.id) }
            var position: [String: Int] = [:]
            var byCharge: [String: [Int]] = [:]
            var byPaymentIntent: [String: [Int]] = [:]
            position.reserveCapacity(entries.count)
            for (offset, entry) in entries.enumerated() {
                position[entry.id] = offset
                if let charge = entry.charge { byCharge[charge, default: []].append(offset) }
                byPaymentIntent[entry.paymentIntent, default: []].append(offset)
            }
            self.position = position
            self.byCharge = byCharge
            self.byPaymentIntent = byPaymentIntent
        }

        /// The positions whose `created` is within `lower...upper` (whole seconds): a range, since `created`
        /// never grows down the list.
        func positions(createdFrom lower: Int64, through upper: Int64) -> Range<Int> {
            func firstPosition(where test: (Int64) -> Bool) -> Int {
                var low = 0
                var high = entries.count
                while low < high {
                    let middle = (low + high) / 2
                    if test(entries[middle].created) { high = middle } else { low = middle + 1 }
                }
                return low
            }
            let start = firstPosition { $0 <= upper }
            let end = firstPosition { $0 < lower }
            return start..<max(start, end)
        }
    }

    enum List: Hashable { case paymentIntents, charges, refunds, disputes, fraudWarnings, events }

    let lists: [List: Sorted]
    /// Charges and disputes by id, for the objects asked alone.
    let charges: [String: (payment: String, index: Int)]
    let disputes: [String: (payment: String, index: Int)]

    init(_ world: StripeWorld) {
        var lists: [List: [Entry]] = [:]
        var charges: [String: (payment: String, index: Int)] = [:]
        var disputes: [String: (payment: String, index: Int)] = [:]
        func add(_ list: List, _ id: String, _ created: Date, charge: String?, _ payment: StripePaymentRecord, _ source: Source, event: String? = nil)
        {
            lists[list, default: []].append(
                Entry(id: id, created: StripeSimulator.seconds(created), charge: charge, paymentIntent: payment.id, source: source, event: event))
        }
        for payment in world.payments.values {
            let latest = payment.latestCharge?.id
            add(.paymentIntents, payment.id, payment.created, charge: nil, payment, .paymentIntent)
            for (index, charge) in payment.charges.enumerated() {
                add(.charges, charge.id, charge.created, charge: charge.id, payment, .charge(index))
                charges[charge.id] = charges[charge.id] ?? (payment.id, index)
            }
            for (index, refund) in payment.refunds.enumerated() {
                let charge = refund.charge ?? latest
                add(.refunds, refund.id, refund.created, charge: charge, payment, .refund(index))
                // A refund's events: created, then failed or updated an hour later when it did not stay as created.
                add(.events, Self.eventID(refund.id, "refund.created"), refund.created, charge: nil, payment, .refund(index), event: "refund.created")
                let later = refund.status == "failed" ? "refund.failed" : refund.status == "pending" ? nil : "refund.updated"
                if let later {
                    add(.events, Self.eventID(refund.id, later), refund.created + 3_600, charge: nil, payment, .refund(index), event: later)
                }
            }
            for (index, warning) in (payment.fraudWarnings ?? []).enumerated() {
                add(.fraudWarnings, warning.id, warning.created, charge: latest, payment, .fraudWarning(index))
                let type = "radar.early_fraud_warning.created"
                add(.events, Self.eventID(warning.id, type), warning.created, charge: nil, payment, .fraudWarning(index), event: type)
            }
            for (index, dispute) in payment.disputes.enumerated() {
                add(.disputes, dispute.id, dispute.created, charge: dispute.charge ?? latest, payment, .dispute(index))
                disputes[dispute.id] = disputes[dispute.id] ?? (payment.id, index)
                // A dispute's events: created, updated when escalated from an inquiry, then closed five days later
                // once won or lost.
                let type = "charge.dispute.created"
                add(.events, Self.eventID(dispute.id, type), dispute.created, charge: nil, payment, .dispute(index), event: type)
                if let escalated = dispute.escalatedAt {
                    let updated = "charge.dispute.updated"
                    add(.events, Self.eventID(dispute.id, updated), escalated, charge: nil, payment, .dispute(index), event: updated)
                }
                if dispute.status == "won" || dispute.status == "lost" {
                    let closed = "charge.dispute.closed"
                    add(.events, Self.eventID(dispute.id, closed), dispute.created + 5 * 86_400, charge: nil, payment, .dispute(index), event: closed)
                }
            }
        }
        self.lists = lists.mapValues(Sorted.init)
        self.charges = charges
        self.disputes = disputes
    }

    func sorted(_ list: List) -> Sorted { lists[list] ?? Sorted([]) }

    static func eventID(_ objectID: String, _ type: String) -> String { "evt_" + objectID + "_" + type.replacingOccurrences(of: ".", with: "_") }
}
