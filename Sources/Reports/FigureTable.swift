public import Reconciliation

/// An app and a product: how the refund-request and chargeback-review parts of a report group their figures.
public struct AppProduct: Hashable, Comparable, Sendable {
    public var app: String
    public var product: String

    public init(app: String, product: String) {
        self.app = app
        self.product = product
    }

    public static func < (lhs: AppProduct, rhs: AppProduct) -> Bool { (lhs.app, lhs.product) < (rhs.app, rhs.product) }
}

/// A figure a report counts over lines of one kind (a refund request, a chargeback review): whether a line
/// counts, with which units, and the note finance reads beside it.
public protocol CountedFigure: CaseIterable, Hashable, Sendable, RawRepresentable where RawValue == String, AllCases == [Self] {
    associatedtype Line
    var note: String { get }
    func counts(_ line: Line) -> Bool
    func units(_ line: Line) -> Int64
}

/// The (count, units) of every figure, per app and product, and their summary rows and HTML table: the
/// shared form of a report's counted parts (refund requests, chargeback reviews, a store's own part).
public enum FigureTable {
    public static func totals<Figure: CountedFigure>(_ lines: [Figure.Line], key: (Figure.Line) -> AppProduct) -> [AppProduct: [Figure: (
        count: Int, units: Int64
    )]] {
        var totals: [AppProduct: [Figure: (count: Int, units: Int64)]] = [:]
        for line in lines {
            for figure in Figure.allCases where figure.counts(line) {
                let sum = totals[key(line), default: [:]][figure] ?? (0, 0)
                totals[key(line), default: [:]][figure] = (sum.count + 1, sum.units + figure.units(line))
            }
        }
        return totals
    }

    /// The summary CSV's rows of `section`: every figure of every app and product with a line.
    public static func summaryRows<Figure: CountedFigure>(
        _ totals: [AppProduct: [Figure: (count: Int, units: Int64)]], section: String, window: String, store: Store
    ) -> [[CSVField]] {
        totals.keys.sorted().flatMap { key in
            Figure.allCases.map { figure in
                let sum = totals[key]?[figure] ?? (0, 0)
                return [
                    .text(window), .text(section), .text(figure.rawValue), .text(key.app), .empty, .integer(sum.count), .integer(sum.units), .empty,
                    .text(figure.note), .text(key.product), .text(store.rawValue),
                ] as [CSVField]
            }
        }
    }

    /// One row per app and product: the count of each figure in `columns`, then the units of `unitsFigure`.
    public static func html<Figure: CountedFigure>(
        _ totals: [AppProduct: [Figure: (count: Int, units: Int64)]], id: String, empty: String, columns: [(Figure, String)], units: (Figure, String)
    ) -> String {
        guard !totals.isEmpty else { return "<p class=\"empty\" id=\"\(id)\">\(HTMLSummary.escape(empty))</p>\n" }
        var table = "<table id=\"\(id)\"><thead><tr><th>Product</th><th>App</th>"
        for (_, title) in columns { table += "<th class=\"num\">\(HTMLSummary.escape(title))</th>" }
        table += "<th class=\"num\">\(HTMLSummary.escape(units.1))</th></tr></thead><tbody>\n"
        for key in totals.keys.sorted() {
            table += "<tr><td>\(HTMLSummary.escape(key.product))</td><td>\(HTMLSummary.escape(key.app))</td>"
            for (figure, _) in columns { table += "<td class=\"num\">\(totals[key]?[figure]?.count ?? 0)</td>" }
            table += "<td class=\"num\">\(totals[key]?[units.0]?.units ?? 0)</td></tr>\n"
        }
        return table + "</tbody></table>\n"
    }
}
