/// What the shared code needs to know of a store, declared by its driver and registered in the `StoreCatalog`:
/// its words for people, its strategies, the verdicts only it reaches, the words finance reads in the
/// summary report, and the rules a grant of it must keep on import. The shared runs, summaries, reports
/// and imports read these; none of them names a store.
public struct StoreDescription: Sendable {
    public var store: Store
    /// Who speaks for the store in messages for people ("Apple").
    public var company: String
    /// For people ("App Store").
    public var displayName: String
    /// Its strategies, the monthly run's default first; at most one is daily.
    public var strategies: [RunStrategy]
    /// Former names of its strategies, still read from the command line and from stored runs.
    public var formerNames: [String: RunStrategy]
    /// The verdict of a purchase the store does not know.
    public var unknownVerdict: Verdict
    /// Every verdict only this store's runs reach (its `unknownVerdict` included).
    public var ownVerdicts: Set<Verdict>
    /// The summary report's words for this store.
    public var report: ReportWords
    /// The rules a grant of this store keeps on import.
    public var importRules: ImportRules

    public init(
        store: Store, company: String, displayName: String, strategies: [RunStrategy], formerNames: [String: RunStrategy] = [:],
        unknownVerdict: Verdict = .unknownToStore, ownVerdicts: Set<Verdict> = [], report: ReportWords, importRules: ImportRules = ImportRules()
    ) {
        self.store = store
        self.company = company
        self.displayName = displayName
        self.strategies = strategies
        self.formerNames = formerNames
        self.unknownVerdict = unknownVerdict
        self.ownVerdicts = ownVerdicts.union([unknownVerdict])
        self.report = report
        self.importRules = importRules
    }

    /// The monthly run's default strategy.
    public var monthlyStrategy: RunStrategy? { strategies.first { !$0.isDaily } }

    /// The daily run's strategy (nil: the store has no daily run).
    public var dailyStrategy: RunStrategy? { strategies.first(where: \.isDaily) }

    /// The summary report's words for a store: its completeness rows and its verdicts' notes.
    public struct ReportWords: Sendable {
        /// The completeness rows' key prefix: `<key>_requests`, `<key>_rate_limited`.
        public var requestsKey: String
        /// Its request rows appear in a summary of no run at all (the figures finance has read since 1.0).
        public var requestsWithoutRuns: Bool
        /// What the rate-limited figure counts ("429 answers").
        public var rateLimitedNote: String
        /// The notes of its own verdicts.
        public var verdictNotes: [Verdict: String]
        /// A completeness row for a run that could not cover an app's refund feed (`voids_not_covered` of its
        /// runs), if the store has such a feed.
        public var coverage: CoverageWords?

        public init(
            requestsKey: String, requestsWithoutRuns: Bool = false, rateLimitedNote: String = "429 answers", verdictNotes: [Verdict: String] = [:],
            coverage: CoverageWords? = nil
        ) {
            self.requestsKey = requestsKey
            self.requestsWithoutRuns = requestsWithoutRuns
            self.rateLimitedNote = rateLimitedNote
            self.verdictNotes = verdictNotes
            self.coverage = coverage
        }
    }

    /// The completeness row of a store's refund feed coverage.
    public struct CoverageWords: Sendable {
        public var key: String
        public var coveredNote: String
        /// Followed by the apps not covered.
        public var uncoveredNote: String

        public init(key: String, coveredNote: String, uncoveredNote: String) {
            self.key = key
            self.coveredNote = coveredNote
            self.uncoveredNote = uncoveredNote
        }
    }

    /// The rules a store's grant keeps on import (beyond the fields every grant has).
    public struct ImportRules: Sendable {
        /// The optional fields only this store's grants may carry.
        public var ownFields: [String]
        /// The grant's identity is its transaction id: `original_transaction_id` is the same, or left out.
        public var originalIsTransactionID: Bool
        /// The regular expression every transaction id of this store matches whole, and what such an id is
        /// called (a Stripe grant's is its PaymentIntent, `pi_…`): the store's grant path's own rule, so an id
        /// it would refuse is refused on import too, rather than found months later as a purchase the store
        /// does not know.
        public var transactionIDPattern: (pattern: String, naming: String)?

        public init(
            ownFields: [String] = [], originalIsTransactionID: Bool = false, transactionIDPattern: (pattern: String, naming: String)? = nil
        ) {
            self.ownFields = ownFields
            self.originalIsTransactionID = originalIsTransactionID
            self.transactionIDPattern = transactionIDPattern
        }
    }
}
