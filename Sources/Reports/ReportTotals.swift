public import Foundation
public import Reconciliation
public import Storage

/// The figures of a report, gathered while its flagged purchases stream past (so the summary and the HTML
/// page never need the purchases in memory). Amounts stay integer milliunits.
public struct ReportTotals: Sendable {
    public struct Tally: Sendable, Equatable {
        public var count = 0
        public var units: Int64 = 0
    }

    public struct CurrencyTally: Sendable, Equatable {
        /// Every refund found in the window, including those an earlier run already recorded.
        public var refunds = 0
        public var amountMilli: Int64 = 0
        /// Refunds these runs clawed back for the first time (action clawback_created): summing this across
        /// monthly reports counts each refund once.
        public var newRefunds = 0
        public var newAmountMilli: Int64 = 0
    }

    public struct ProductKey: Sendable, Hashable, Comparable {
        public var bundleID: String
        public var productID: String
        public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.bundleID, lhs.productID) < (rhs.bundleID, rhs.productID) }
    }

    /// A currency and a product: the rows of the recovery section.
    public struct RecoveryKey: Sendable, Hashable, Comparable {
        public var currency: String
        public var bundleID: String
        public var productID: String
        public static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.currency, lhs.bundleID, lhs.productID) < (rhs.currency, rhs.bundleID, rhs.productID)
        }
    }

    /// One recovery figure: purchases, units (asked or applied, see `RecoveryFigure.figures`), and their value.
    public struct Figure: Sendable, Equatable {
        public var count = 0
        public var units: Int64 = 0
        public var amountMilli: Int64 = 0
    }

    /// Flagged purchases by verdict; units are the ledger movement of the report's runs.
    public private(set) var byVerdict: [Verdict: Tally] = [:]
    /// Refunds by Apple's currency; refunds without an Apple price are counted under "".
    public private(set) var byCurrency: [String: CurrencyTally] = [:]
    /// Refunds (refunded or revoked) by product: count, and units taken back by these runs.
    public private(set) var byProduct: [ProductKey: Tally] = [:]
    /// Refunds by the Monday of the week Apple refunded them (days since 1970-01-01).
    public private(set) var byWeek: [Int64: Tally] = [:]
    /// The game's side, by currency and product: what these runs asked it to take or give, and what it did,
    /// as acknowledged by `asOf`. Purchases whose take-back an earlier window recorded are in that window's.
    public private(set) var byRecovery: [RecoveryKey: [RecoveryFigure: Figure]] = [:]
    /// What these runs moved, gross, by currency ("" for purchases without a price): units taken back and
    /// given back, and their value at each purchase's price (rounded per purchase, as the detail rows are).
    public struct Movement: Sendable, Equatable {
        public var takenUnits: Int64 = 0
        public var takenMilli: Int64 = 0
        public var givenUnits: Int64 = 0
        public var givenMilli: Int64 = 0
        public var netUnits: Int64 { takenUnits - givenUnits }
        public var netMilli: Int64 { takenMilli - givenMilli }
    }
    public private(set) var byMovement: [String: Movement] = [:]
    /// Flagged purchases by store, kind and currency: count, units these runs moved (taken back > 0), and for
    /// refunds the refunded amount at the store's price (rounded as the detail row shows it).
    public private(set) var byStore: [StoreKey: Figure] = [:]
    /// When the acknowledgements were read: pending ages count to it.
    public let asOf: Date
    /// The first purchases needing review, in report order, and how many there are in all.
    public private(set) var review: [FlaggedPurchase] = []
    public private(set) var reviewCount = 0
    public let reviewListLimit: Int

    public init(asOf: Date, reviewListLimit: Int = 500) {
        self.asOf = asOf
        self.reviewListLimit = reviewListLimit
    }

    public mutating func add(_ purchase: FlaggedPurchase) throws(ReportError) {
        byVerdict[purchase.verdict, default: Tally()].count += 1
        byVerdict[purchase.verdict, default: Tally()].units += purchase.unitsChange
        if let kind = FlaggedKind(purchase) {
            let key = StoreKey(store: purchase.store, kind: kind, currency: purchase.storeCurrency ?? "")
            var figure = byStore[key, default: Figure()]
            figure.count += 1
            figure.units = try Self.sum(figure.units, purchase.unitsChange, purchase, what: "units")
            if let amount = purchase.refundedAmountMilli.map({ Money.rounded(milli: $0, currency: purchase.storeCurrency) }) {
                figure.amountMilli = try Self.sum(figure.amountMilli, amount, purchase)
            }
            byStore[key] = figure
        }
        if purchase.isRefund {
            var currency = byCurrency[purchase.storeCurrency ?? "", default: CurrencyTally()]
            currency.refunds += 1
            let isNew = purchase.action == .clawbackCreated
            if isNew { currency.newRefunds += 1 }
            // The row's amount as the detail CSV shows it (rounded to the currency): the totals foot.
            if let amount = purchase.refundedAmountMilli.map({ Money.rounded(milli: $0, currency: purchase.storeCurrency) }) {
                currency.amountMilli = try Self.sum(currency.amountMilli, amount, purchase)
                if isNew { currency.newAmountMilli = try Self.sum(currency.newAmountMilli, amount, purchase) }
            }
            byCurrency[purchase.storeCurrency ?? ""] = currency
            let product = ProductKey(bundleID: purchase.bundleID, productID: purchase.productID)
            byProduct[product, default: Tally()].count += 1
            byProduct[product, default: Tally()].units += purchase.unitsChange
            if let date = purchase.revocationDate {
                let week = ReportTimestamp.weekStartDay(date)
                byWeek[week, default: Tally()].count += 1
                byWeek[week, default: Tally()].units += purchase.unitsChange
            }
        }
        if let position = purchase.position {
            let key = RecoveryKey(currency: purchase.storeCurrency ?? "", bundleID: purchase.bundleID, productID: purchase.productID)
            var figures = byRecovery[key, default: [:]]
            for (figure, applied) in RecoveryFigure.figures(of: position, asOf: asOf) {
                var tally = figures[figure, default: Figure()]
                tally.count += 1
                tally.units = try Self.sum(tally.units, applied ? position.unitsApplied ?? 0 : position.units, purchase, what: "units")
                // The rounded value the detail row shows in the matching column: the section foots too.
                if let amount = applied ? purchase.recoveredAmountMilli : purchase.entryAmountMilli {
                    tally.amountMilli = try Self.sum(tally.amountMilli, amount, purchase)
                }
                figures[figure] = tally
            }
            byRecovery[key] = figures
        }
        if purchase.needsReview {
            reviewCount += 1
            if review.count < reviewListLimit { review.append(purchase) }
        }
    }

    /// Adds what the report's runs moved for one purchase (`ReportStore.movements`), valued at its price.
    public mutating func add(_ movement: PurchaseMovement) throws(ReportError) {
        let currency = movement.priceMilli == nil ? "" : movement.currency ?? ""
        var total = byMovement[currency, default: Movement()]
        func checked(_ a: Int64, _ b: Int64) throws(ReportError) -> Int64 {
            let (sum, overflow) = a.addingReportingOverflow(b)
            guard !overflow else { throw .badData("the \(currency) movement overflows at transaction \(movement.transactionID)") }
            return sum
        }
        total.takenUnits = try checked(total.takenUnits, movement.taken)
        total.givenUnits = try checked(total.givenUnits, movement.given)
        if let price = movement.priceMilli {
            for (units, field) in [(movement.taken, \Movement.takenMilli), (movement.given, \Movement.givenMilli)] where units != 0 {
                guard let value = Money.value(ofUnits: units, granted: movement.unitsGranted, priceMilli: price) else {
                    throw .badData("the value of \(units) units overflows at transaction \(movement.transactionID)")
                }
                total[keyPath: field] = try checked(total[keyPath: field], Money.rounded(milli: value, currency: currency))
            }
        }
        byMovement[currency] = total
    }

    /// Every currency's movement added up, in units (the cards): nil when the sum overflows.
    public var movedUnits: Movement? {
        var total = Movement()
        for movement in byMovement.values {
            let (taken, overTaken) = total.takenUnits.addingReportingOverflow(movement.takenUnits)
            let (given, overGiven) = total.givenUnits.addingReportingOverflow(movement.givenUnits)
            guard !overTaken, !overGiven else { return nil }
            total.takenUnits = taken
            total.givenUnits = given
        }
        return total
    }

    /// The recovery figures of every product, by currency: the headline of owed, recovered and pending.
    public var recoveryByCurrency: [String: [RecoveryFigure: Figure]] {
        var result: [String: [RecoveryFigure: Figure]] = [:]
        for (key, figures) in byRecovery {
            for (figure, tally) in figures {
                var total = result[key.currency, default: [:]][figure, default: Figure()]
                // Each product's figure was summed with an overflow check; a currency's sum of them saturates
                // rather than trap (it would take more than 9.2 × 10^15 of the currency).
                total.count += tally.count
                total.units = total.units.addingReportingOverflow(tally.units).overflow ? .max : total.units + tally.units
                total.amountMilli =
                    total.amountMilli.addingReportingOverflow(tally.amountMilli).overflow ? .max : total.amountMilli + tally.amountMilli
                result[key.currency, default: [:]][figure] = total
            }
        }
        return result
    }

    private static func sum(_ total: Int64, _ amount: Int64, _ purchase: FlaggedPurchase, what: String = "amount") throws(ReportError)
        -> Int64
    {
        let (result, overflow) = total.addingReportingOverflow(amount)
        guard !overflow else {
            throw ReportError.badData("the \(purchase.storeCurrency ?? "") \(what) total overflows at transaction \(purchase.transactionID)")
        }
        return result
    }
}
