import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Connecting")
struct ConnectionTests {
    @Test("connects with a URI, a key=value string, and libpq's PG* environment alone")
    func connectionForms() throws {
        let uri = try TestPostgres.connectionString()
        let byURI = try PostgresConnection(PostgresConfiguration(connectionString: uri))
        #expect(try byURI.query("SELECT 1").first?.decode(Int.self, at: 0) == 1)

        let environment = ProcessInfo.processInfo.environment
        let host = try #require(environment["PGHOST"], "the test script exports PGHOST")
        let port = try #require(environment["PGPORT"])
        let user = try #require(environment["PGUSER"])
        let database = try #require(environment["PGDATABASE"])
        let byKeywords = try PostgresConnection(
            PostgresConfiguration(connectionString: "host=\(host) port=\(port) user=\(user) dbname=\(database)"))
        #expect(try byKeywords.query("SELECT current_database()").first?.decode(String.self, at: 0) == database)

        // An empty string leaves everything to libpq's defaults: PGHOST, PGPORT, PGUSER, PGDATABASE.
        let byEnvironment = try PostgresConnection(PostgresConfiguration(connectionString: ""))
        #expect(try byEnvironment.query("SELECT current_database()").first?.decode(String.self, at: 0) == database)
    }

    @Test("the session runs in UTC with ISO dates and the configured statement timeout")
    func sessionSettings() throws {
        let connection = try TestPostgres.connect(statementTimeout: .seconds(42))
        let row = try #require(
            try connection.query("SELECT current_setting('TimeZone'), current_setting('statement_timeout')").first)
        #expect(try row.decode(String.self, at: 0) == "UTC")
        #expect(try row.decode(String.self, at: 1) == "42s")
    }

    @Test("a failed connect is a typed error and says where it tried")
    func failedConnect() throws {
        let configuration = PostgresConfiguration(connectionString: "postgresql://nobody@127.0.0.1:1/none")
        let error = try #require(throws: PostgresError.self) { try PostgresConnection(configuration) }
        #expect(error.code == .connectionFailed)
        #expect(error.operation == "connect")
        #expect(error.description.contains("127.0.0.1"))
    }

    @Test("an unparsable connection string does not echo its text, which may hold a password")
    func unparsableConnectionString() throws {
        let configuration = PostgresConfiguration(connectionString: "host=x password=s3cret-value bogus")
        let error = try #require(throws: PostgresError.self) { try PostgresConnection(configuration) }
        #expect(error.code == .connectionFailed)
        #expect(!error.description.contains("s3cret-value"))
        // libpq quotes a bad percent-escape of a URI's password ("invalid percent-encoded token: ...").
        for text in ["postgresql://user:s3cret%zz-value@localhost/db", "postgresql://user:%G1s3cret@localhost/db"] {
            let uri = try #require(throws: PostgresError.self) { try PostgresConnection(PostgresConfiguration(connectionString: text)) }
            #expect(!uri.description.contains("s3cret"), "\(uri)")
        }
    }

    @Test("a password in a connection string is recognised in both forms")
    func passwordDetection() {
        #expect(PostgresConfiguration.containsPassword("postgresql://user:pw@host/db"))
        #expect(PostgresConfiguration.containsPassword("host=h password=pw"))
        #expect(!PostgresConfiguration.containsPassword("postgresql://user@host/db"))
        #expect(!PostgresConfiguration.containsPassword("host=h dbname=d"))
    }

    @Test("a closed connection refuses work with a typed error")
    func closed() throws {
        let connection = try TestPostgres.connect()
        connection.close()
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(error.code == .connectionBroken)
        #expect(!connection.isOpen)
    }

    @Test("a connection killed by the server is reported as broken, not as a query error")
    func terminatedBackend() throws {
        let victim = try TestPostgres.connect()
        let killer = try TestPostgres.connect()
        try killer.query("SELECT pg_terminate_backend(\(victim.backendPID))")
        let error = try #require(throws: PostgresError.self) { try victim.query("SELECT 1") }
        #expect(error.code == .connectionBroken)
    }
}
