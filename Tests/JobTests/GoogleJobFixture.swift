import AppStoreSimulator
import Foundation
import GooglePlay
import Postgres
import Storage
import TestSupport
import Testing
import _CryptoExtras

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// The Google Play simulator over loopback with a world of `orders`, a service account allowed to read
/// `com.studio.game` (and not `com.studio.locked`), its key file, the configuration pointing at both, and a
/// migrated scratch database: what every Google Play job test starts from.
struct GoogleJobFixture {
    static let account = "clawback@studio.iam.gserviceaccount.com"
    static var key: _RSA.Signing.PrivateKey { GoogleSimulator.key }

    let simulator: GooglePlaySimulator
    let configuration: ClawbackConfiguration
    let database: PostgresConfiguration
    /// The scratch database's name, for a `JobFixture` on the same database (both stores at once).
    let databaseName: String
    let connection: PostgresConnection

    /// The Pub/Sub subscription on the topic both apps' notifications go to, which the account may pull.
    /// Its leases last Pub/Sub's longest (600 s), not the default 10 s: a test starved of the CPU by the rest of
    /// the suite between a pull and its acknowledgement would otherwise see every message again and count a
    /// redelivery it did not arrange (the CLI crash tests arrange expiry on purpose, with 2 s).
    static let subscription = "projects/studio/subscriptions/clawback"
    static let topic = "projects/studio/topics/play"

    /// `clock`: the simulator's (tokens, Pub/Sub leases, review deadlines), when a test moves time.
    static func with(
        _ orders: [GoogleOrderRecord], packages: [String], clock: (@Sendable () -> Date)? = nil, _ body: (GoogleJobFixture) async throws -> Void
    ) async throws {
        let world = GooglePlayWorld(
            packages: [
                GooglePackageRecord(
                    packageName: "com.studio.game", serviceAccounts: [account: key.publicKey.pemRepresentation], notificationTopic: topic),
                GooglePackageRecord(packageName: "com.studio.locked", serviceAccounts: [:], notificationTopic: topic),
            ], orders: orders,
            subscriptions: [GoogleSubscriptionRecord(name: subscription, topic: topic, subscribers: [account], ackDeadlineSeconds: 600)])
        let server = try await GoogleSimulator.start(world, clock: clock)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-google-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        @Sendable func stop(_: Void) async {
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        try await scoped((), stop: stop) { _ in
            let keyPath = directory.appendingPathComponent("google.json").path
            let json = GoogleSimulator.keyJSON(email: account, privateKeyID: "k", tokenURI: AccessTokenProvider.audience)
            #expect(FileManager.default.createFile(atPath: keyPath, contents: json, attributes: [.posixPermissions: 0o600]))
            var configuration = ClawbackConfiguration()
            configuration.google.apiURL = "http://127.0.0.1:\(server.port)"
            configuration.google.tokenURL = configuration.google.apiURL + GooglePlaySimulator.tokenPath
            configuration.googleApps = packages.map { .init(packageName: $0, serviceAccountKeyFile: keyPath) }
            configuration.google.notifications = .init(subscription: subscription, pubsubURL: configuration.google.apiURL)
            try await TestPostgres.withScratchDatabaseAsync { database in
                let connection = try TestPostgres.connect(database: database)
                try Migrator().migrate(on: connection.storage)
                // swift-format-ignore: NeverForceUnwrap
                let google = server.simulator.google!  // started with a Google world
                try await body(
                    GoogleJobFixture(
                        simulator: google, configuration: configuration, database: try TestPostgres.configuration(database: database),
                        databaseName: database, connection: connection))
            }
        }
    }
}
