public import Foundation

/// Apple's signed test vectors, kept in the repository at Tests/Fixtures/apple-vectors (its README says
/// where each file comes from and how it was checked). Tests fail, not skip, when they are missing.
public enum AppleVectors {
    public struct Missing: Error, CustomStringConvertible {
        let path: String
        public var description: String {
            "Apple's test vectors are not at \(path) (CLAWBACK_APPLE_VECTORS names another directory)"
        }
    }

    /// The vectors directory: $CLAWBACK_APPLE_VECTORS, else Tests/Fixtures/apple-vectors, found from this
    /// source file's own path (Tests/TestSupport/AppleVectors.swift), so it does not depend on the working directory.
    public static func directory() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["CLAWBACK_APPLE_VECTORS"] {
            return URL(fileURLWithPath: override)
        }
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let directory = tests.appendingPathComponent("Fixtures/apple-vectors")
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("manifest.json").path) else {
            throw Missing(path: directory.path)
        }
        return directory
    }

    public static func data(_ relativePath: String) throws -> Data {
        try Data(contentsOf: try directory().appendingPathComponent(relativePath))
    }

    /// A text vector (JWS, base64 receipt) without surrounding white space.
    public static func text(_ relativePath: String) throws -> String {
        String(decoding: try data(relativePath), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// One entry of manifest.json's `real` list.
    public struct RealVector: Sendable {
        public let file: String
        public let kind: String
        public let environment: String
        public let bundleID: String?
        public let contextBundleID: String?
        public let appAppleID: Int64?
        public let signedDateMillis: Int64
    }

    public static func realVectors() throws -> [RealVector] {
        let manifest = try JSONSerialization.jsonObject(with: try data("manifest.json")) as? [String: Any]
        let entries = manifest?["real"] as? [[String: Any]] ?? []
        return entries.map { entry in
            RealVector(
                file: entry["file"] as? String ?? "", kind: entry["kind"] as? String ?? "",
                environment: entry["environment"] as? String ?? "", bundleID: entry["bundleId"] as? String,
                contextBundleID: entry["contextBundleId"] as? String,
                appAppleID: (entry["appAppleId"] as? NSNumber)?.int64Value,
                signedDateMillis: (entry["signedDateMillis"] as? NSNumber)?.int64Value ?? 0)
        }
    }
}
