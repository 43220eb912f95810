import Foundation
import Locking
public import Reconciliation

/// A store driver's section of the configuration file (`StoreDriver.configurationKey`), read by the file's
/// rules: a key the driver does not know is refused, and every problem names its field and is reported
/// with the file's others, at once.
public struct ConfigurationSection {
    let node: ConfigNode
    let problems: Locked<[ConfigurationError]>
    let resolve: (String?) -> String?

    /// The field's path in the file (`stripe`, `stripe.accounts[0]`).
    public var path: String { node.path }

    /// Whether the file has this section.
    public var isPresent: Bool { node.isPresent }

    /// Refuses keys this section does not know: a typo must not silently fall back to a default.
    public func rejectUnknownKeys(_ known: Set<String>) { record { node.rejectUnknownKeys(known, into: &$0) } }

    public func string(_ key: String) -> String? { record { node.child(key).string(into: &$0) } }
    public func int(_ key: String) -> Int? { record { node.child(key).int(into: &$0) } }
    public func double(_ key: String) -> Double? { record { node.child(key).double(into: &$0) } }
    public func bool(_ key: String) -> Bool? { record { node.child(key).bool(into: &$0) } }

    /// A file's path, relative to the configuration file's directory when not absolute.
    public func filePath(_ key: String) -> String? { resolve(string(key)) }

    public func section(_ key: String) -> ConfigurationSection { ConfigurationSection(node: node.child(key), problems: problems, resolve: resolve) }

    /// The items of a list (none when absent; a problem when not a list).
    public func list(_ key: String) -> [ConfigurationSection] {
        record { node.child(key).list(into: &$0) }.map { ConfigurationSection(node: $0, problems: problems, resolve: resolve) }
    }

    /// Records a problem with `key` of this section.
    public func problem(_ key: String, _ text: String) {
        problems.withLock { $0.append(ConfigurationError(field: path.isEmpty ? key : "\(path).\(key)", problem: text)) }
    }

    private func record<T>(_ read: (inout [ConfigurationError]) -> T) -> T {
        var found: [ConfigurationError] = []
        let value = read(&found)
        if !found.isEmpty { problems.withLock { $0 += found } }
        return value
    }
}

/// What a store driver read from its section of the configuration file.
public protocol StoreSettings: Sendable, Equatable {}

extension StoreSettings {
    func isEqual(to other: any StoreSettings) -> Bool { (other as? Self) == self }
}

/// A driver's settings as the configuration keeps them (compared as the settings' own type compares them).
struct StoredSettings: Sendable, Equatable {
    let value: any StoreSettings

    static func == (one: StoredSettings, other: StoredSettings) -> Bool { one.value.isEqual(to: other.value) }
}

extension ClawbackConfiguration {
    /// A registered store driver's settings, as it read them from its section (nil: it has no section, or
    /// read nothing).
    public func settings(of store: Store) -> (any StoreSettings)? { storeSettings[store.rawValue]?.value }

    /// Each registered driver with a section of its own reads it (`StoreDriver.readSettings`); its top-level
    /// key is then known to the file.
    static func parseStoreSections(
        _ root: ConfigNode, into configuration: inout ClawbackConfiguration, errors: inout [ConfigurationError],
        resolve: @escaping (String?) -> String?
    ) {
        for driver in StoreDrivers.all {
            guard let key = driver.configurationKey else { continue }
            let problems = Locked<[ConfigurationError]>([])
            let section = ConfigurationSection(node: root.child(key), problems: problems, resolve: resolve)
            configuration.storeSettings[driver.storeDescription.store.rawValue] = driver.readSettings(section).map(StoredSettings.init)
            errors += problems.withLock { $0 }
        }
    }

    /// The top-level keys the registered drivers' sections take.
    static var storeSectionKeys: Set<String> { Set(StoreDrivers.all.compactMap(\.configurationKey)) }
}
