public import AppStoreSimulator
public import Foundation
import GooglePlay
public import _CryptoExtras

/// What every Google Play test starts from, whichever module it tests: the simulator serving a Google Play
/// world (and no App Store apps) on a free loopback port, and the one service-account key the tests sign
/// with. The client tests (`GoogleClientFixture`) and the job tests (`GoogleJobFixture`) build on it.
public enum GoogleSimulator {
    /// One RSA key for every test of the process: generating one is slow in debug builds.
    // swift-format-ignore: NeverUseForceTry
    public static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)  // generating a key cannot fail

    /// Starts the simulator with `world`; `clock` is its (tokens, Pub/Sub leases, review deadlines) when a
    /// test moves time.
    public static func start(_ world: GooglePlayWorld, clock: (@Sendable () -> Date)? = nil, threads: Int = 2) async throws -> SimulatorServer {
        let configuration = clock.map { SimulatorConfiguration(clock: $0) } ?? SimulatorConfiguration()
        let simulator = Simulator(world: World(apps: [], transactions: []), chain: try SigningChain(), configuration: configuration, google: world)
        return try await SimulatorServer.start(simulator: simulator, threads: threads)
    }

    /// A service-account key file's JSON for `email`, signed with `key`, whose tokens come from `tokenURI`.
    public static func keyJSON(email: String, key: _RSA.Signing.PrivateKey = key, privateKeyID: String = "k1", tokenURI: String) -> Data {
        ServiceAccountKey.json(clientEmail: email, privateKeyPEM: key.pkcs8PEMRepresentation, privateKeyID: privateKeyID, tokenURI: tokenURI)
    }
}
