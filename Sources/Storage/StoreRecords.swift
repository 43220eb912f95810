/// A store's own records kept for finance (Google Play's voids, Stripe's disputes and early fraud warnings),
/// pruned with the runs, checks and ledger entries once older than the record retention
/// (`tail_window.record_retention_years`). Each store's driver names its tables; `GrantPruner` deletes
/// their rows last touched before the cutoff, except those still being worked on.
public struct StoreRecords: Sendable, Equatable {
    /// What the rows are, in the prune's table ("Google Play voids").
    public var label: String
    /// The table, schema-qualified: SQL text from code, never from input.
    public var table: String
    /// An SQL expression of a row's latest time (`greatest(seen_at, settled_at)`): older than the cutoff, it goes.
    public var lastTouched: String
    /// An SQL condition under which a row stays whatever its age (work not finished); nil: none.
    public var keepWhile: String?

    public init(label: String, table: String, lastTouched: String, keepWhile: String? = nil) {
        self.label = label
        self.table = table
        self.lastTouched = lastTouched
        self.keepWhile = keepWhile
    }

    /// How many of them a prune deleted (or, in a dry run, would delete).
    public struct Pruned: Sendable, Equatable {
        public var label: String
        public var rows: Int

        public init(label: String, rows: Int) {
            self.label = label
            self.rows = rows
        }
    }
}
