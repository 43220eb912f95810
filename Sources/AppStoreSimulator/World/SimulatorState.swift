import Crypto
import Foundation
import X509

/// Keeps the simulator's signing chain in a directory, so that a restarted simulator signs with the same
/// root the job already trusts. Keys are written readable by the owner only.
public enum SimulatorState {
    static let files = ["root", "intermediate", "leaf"]

    /// The chain saved in `directory`, or a new one saved there. Also writes `root.pem` and `root.der`.
    public static func chain(in directory: String) throws -> SigningChain {
        let base = URL(fileURLWithPath: directory)
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        if let existing = try? load(base) { return existing }
        let chain = try SigningChain()
        try save(chain, to: base)
        return chain
    }

    static func load(_ base: URL) throws -> SigningChain {
        func key(_ name: String) throws -> P256.Signing.PrivateKey {
            try P256.Signing.PrivateKey(pemRepresentation: try String(contentsOf: base.appendingPathComponent("\(name).key.pem"), encoding: .utf8))
        }
        func certificate(_ name: String) throws -> Certificate {
            try Certificate(pemEncoded: try String(contentsOf: base.appendingPathComponent("\(name).pem"), encoding: .utf8))
        }
        return SigningChain(
            rootKey: try key("root"), intermediateKey: try key("intermediate"), leafKey: try key("leaf"),
            root: try certificate("root"), intermediate: try certificate("intermediate"), leaf: try certificate("leaf"))
    }

    static func save(_ chain: SigningChain, to base: URL) throws {
        let keys = [chain.rootKey, chain.intermediateKey, chain.leafKey]
        let certificates = [chain.root, chain.intermediate, chain.leaf]
        for (index, name) in files.enumerated() {
            let keyPath = base.appendingPathComponent("\(name).key.pem").path
            guard
                FileManager.default.createFile(
                    atPath: keyPath, contents: Data(keys[index].pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
            else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: keyPath]) }
            try certificates[index].serializeAsPEM().pemString.write(
                to: base.appendingPathComponent("\(name).pem"), atomically: true, encoding: .utf8)
        }
        try Data(try SigningChain.der(chain.root)).write(to: base.appendingPathComponent("root.der"))
    }
}
