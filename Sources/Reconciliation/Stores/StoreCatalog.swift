import Locking

/// The stores this binary knows: the built-in stores' descriptions (`BuiltInStores`), and any other a driver
/// registers before the first run. Read by the shared code wherever it would otherwise name a store.
public enum StoreCatalog {
    private static let registered = Locked<[StoreDescription]>(BuiltInStores.descriptions)

    /// Adds a store, or replaces the description of one already registered under its identity.
    public static func register(_ description: StoreDescription) {
        // In place when already there: registering again never reorders the stores.
        registered.withLock { stores in
            if let index = stores.firstIndex(where: { $0.store.rawValue == description.store.rawValue }) {
                stores[index] = description
            } else {
                stores.append(description)
            }
        }
    }

    /// Every registered store, in the order registered (the built-in ones first).
    public static var descriptions: [StoreDescription] { registered.withLock { $0 } }

    public static func description(of store: Store) -> StoreDescription? { description(named: store.rawValue) }

    public static func description(named identifier: String) -> StoreDescription? {
        registered.withLock { stores in stores.first { $0.store.rawValue == identifier } }
    }

    /// Every registered store's strategies.
    public static var strategies: [RunStrategy] { descriptions.flatMap(\.strategies) }

    /// The store of a grant that names none (grant files written before stores had a column), whose 1.x columns
    /// the detail report keeps: the App Store, whatever the order drivers are registered in.
    public static var importDefault: Store { BuiltInStores.legacyDefault }
}
