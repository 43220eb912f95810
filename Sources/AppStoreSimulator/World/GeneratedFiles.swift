import AppStore
public import Foundation

/// Writes a generated world as files: what the simulator serves, what the game holds, and the credentials.
public enum GeneratedFiles {
    /// - world.jsonl: the apps and Apple's transactions (for `store-simulator serve --world`);
    /// - grants.jsonl: the game's grants (for `clawback grants import`);
    /// - keys/AuthKey_<keyId>.p8: each app's In-App Purchase key, mode 0600;
    /// - apps.json: bundle id, app Apple id, issuer id, key id and key path of each app;
    /// - clawback-apps.yaml: the same as the `apps:` section of a clawback configuration;
    /// - world-before-reversals.jsonl: the world as it was before Apple reversed any refund (for rehearsing
    ///   two monthly runs: the first claws back, the second sees the reversals).
    /// `lines` as a JSONL file at `path`, a line at a time (one write(2) does not take gigabytes).
    public static func writeLines(_ lines: [Data], to path: String) throws {
        var file = try LineFileWriter(path: path)
        for line in lines { try file.appendLine(line) }
        try file.finish()
    }

    public static func write(_ output: WorldGenerator.Output, to directory: String) throws {
        let base = URL(fileURLWithPath: directory)
        let keys = base.appendingPathComponent("keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        try WorldFile.write(
            output.apps.map { .app($0.record) } + output.transactions.map { .transaction($0) },
            to: base.appendingPathComponent("world.jsonl").path)

        let unreversed = output.transactions.map { transaction -> TransactionRecord in
            var copy = transaction
            copy.refund?.reversedDate = nil
            return copy
        }
        try WorldFile.write(
            output.apps.map { .app($0.record) } + unreversed.map { .transaction($0) },
            to: base.appendingPathComponent("world-before-reversals.jsonl").path)

        let encoder = WorldFile.encoder()
        var grants = try LineFileWriter(path: base.appendingPathComponent("grants.jsonl").path)
        for grant in output.grants { try grants.appendLine(try encoder.encode(grant)) }
        try grants.finish()

        var apps: [[String: Any]] = []
        var yaml = "apps:\n"
        for app in output.apps {
            let keyPath = keys.appendingPathComponent("AuthKey_\(app.keyID).p8").path
            try? FileManager.default.removeItem(atPath: keyPath)
            guard
                FileManager.default.createFile(
                    atPath: keyPath, contents: Data(app.privateKey.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
            else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: keyPath]) }
            yaml +=
                "  - bundle_id: \(app.record.bundleId)\n    app_apple_id: \(app.record.appAppleId)\n"
                + "    issuer_id: \(app.record.issuerId)\n    key_id: \(app.keyID)\n    key_file: \(keyPath)\n"
            apps.append([
                "bundleId": app.record.bundleId, "appAppleId": app.record.appAppleId, "issuerId": app.record.issuerId,
                "keyId": app.keyID, "keyFile": keyPath,
            ])
        }
        try JSONSerialization.data(withJSONObject: apps, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            .write(to: base.appendingPathComponent("apps.json"))
        try yaml.write(to: base.appendingPathComponent("clawback-apps.yaml"), atomically: true, encoding: .utf8)
    }
}
