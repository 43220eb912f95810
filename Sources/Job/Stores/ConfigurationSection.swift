import Foundation
import Locking
public import Reconciliation

/// A store driver's part of the configuration file (the file itself, then `section(_:)` for each of its
/// `StoreDriver.configurationKeys`; it reads no other), read by the file's rules: a key the driver does not
/// know is refused, and every problem names its field and is reported with the file's others, at once.
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

    /// This item's own text (an item of a list of strings).
    public var text: String? { record { node.string(into: &$0) } }

    /// This item's own text as a file's path, relative to the configuration file's directory when not absolute.
    public var resolvedText: String? { resolve(text) }

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

    /// The per-app answering settings of the refund questions (`refund_requests` under an app), shared by every
    /// store that answers one (`ConsumptionAnswerPolicy`).
    public func appRefundRequests(_ key: String) -> ClawbackConfiguration.AppRefundRequests {
        var settings = ClawbackConfiguration.AppRefundRequests()
        record { ClawbackConfiguration.parseAppRefundRequests(node.child(key), into: &settings, errors: &$0) }
        return settings
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

    /// Replaces a store's settings (a test's, or a store driver's accessors of its own settings).
    public mutating func setSettings(_ settings: any StoreSettings, of store: Store) {
        storeSettings[store.rawValue] = StoredSettings(value: settings)
    }

    /// Each registered driver reads its sections (`StoreDriver.readSettings`); their top-level keys are then
    /// known to the file.
    static func parseStoreSections(
        _ root: ConfigNode, into configuration: inout ClawbackConfiguration, errors: inout [ConfigurationError],
        resolve: @escaping (String?) -> String?
    ) {
        for driver in StoreDrivers.all where !driver.configurationKeys.isEmpty || !driver.sharedSectionKeys.isEmpty {
            let problems = Locked<[ConfigurationError]>([])
            let file = ConfigurationSection(node: root, problems: problems, resolve: resolve)
            configuration.storeSettings[driver.storeDescription.store.rawValue] = driver.readSettings(file).map(StoredSettings.init)
            errors += problems.withLock { $0 }
        }
    }

    /// The top-level keys the registered drivers' sections take.
    static var storeSectionKeys: Set<String> { Set(StoreDrivers.all.flatMap(\.configurationKeys)) }

    /// The keys of the shared section `section` the registered drivers read.
    static func storeSharedKeys(_ section: String) -> Set<String> { Set(StoreDrivers.all.flatMap { $0.sharedSectionKeys[section] ?? [] }) }
}
