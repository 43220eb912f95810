import AppStoreSimulator
import Foundation
import Job
import TestSupport
import Testing

/// A web shop's Stripe world served by the simulator over loopback, with a directory of its own for key files
/// and reports, for the length of a test: what the Stripe tests of this target run against.
struct StripeShopServer {
    let simulator: Simulator
    let server: SimulatorServer
    let directory: URL

    /// The Stripe side of the simulator.
    var stripe: StripeSimulator {
        get throws { try #require(simulator.stripe) }
    }

    /// A configuration whose `stripe` section names `key` (written to a file of mode 0600), the simulator and
    /// `shop`, with `extra` lines in the section (`early_fraud_warnings: review`).
    func configuration(key: String = StripeRunTests.key, shop: String = StripeRunTests.shop, extra: [String] = []) throws -> ClawbackConfiguration {
        let keyFile = directory.appendingPathComponent("\(key).key").path
        #expect(FileManager.default.createFile(atPath: keyFile, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]))
        return try ClawbackConfiguration.parseWithStores(
            yaml: "stripe:\n  api_key_file: \(keyFile)\n  api_url: http://127.0.0.1:\(server.port)\n"
                + extra.map { "  \($0)\n" }.joined() + "  shops:\n    - name: \(shop)\n")
    }

    /// Serves `world` for the length of `body`, then stops the server and removes the directory, however the
    /// body ends.
    static func with<T>(_ world: StripeWorld, threads: Int = 1, _ body: (StripeShopServer) async throws -> T) async throws -> T {
        let simulator = Simulator(world: World(apps: [], transactions: []), chain: try SigningChain(), stripe: world)
        let server = try await SimulatorServer.start(simulator: simulator, threads: threads)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-stripe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try await scoped(StripeShopServer(simulator: simulator, server: server, directory: directory)) { shop in
            await shop.server.stop()
            try? FileManager.default.removeItem(at: shop.directory)
        } _: {
            try await body($0)
        }
    }
}
