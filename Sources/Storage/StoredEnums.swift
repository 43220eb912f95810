public import Postgres
public import Reconciliation

// The pure core's enums as the database stores them: their raw values, decoded once at this edge (the
// `init(postgresText:)` comes from the Postgres module's RawRepresentable default).
extension LedgerKind: PostgresDecodable {}
extension AcknowledgementOutcome: PostgresDecodable {}
extension Verdict: PostgresDecodable {}
extension CheckAction: PostgresDecodable {}
extension RunStrategy: PostgresDecodable {}
extension RunStatus: PostgresDecodable {}
