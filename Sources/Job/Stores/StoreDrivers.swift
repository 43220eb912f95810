import Locking
public import Reconciliation
public import Reports

/// The store drivers of this process, registered before the first command runs: the executable registers
/// the built-in stores' (`Clawback.main`), a test its own. Registering a driver registers its description in the
/// `StoreCatalog`, so its store and strategies decode from the database and the command line.
public enum StoreDrivers {
    private static let registered = Locked<[any StoreDriver]>([])

    /// Adds a store's driver, or replaces the driver registered for its store.
    public static func register(_ driver: any StoreDriver) {
        // The catalog is registered under the drivers' lock, so no reader sees a driver whose description
        // the catalog lacks, nor two registrations of one store interleaved (the catalog never takes this lock).
        registered.withLock { drivers in
            StoreCatalog.register(driver.storeDescription)
            // A store registered again keeps its place (the order sections are read and checked in).
            if let index = drivers.firstIndex(where: { $0.storeDescription.store == driver.storeDescription.store }) {
                drivers[index] = driver
            } else {
                drivers.append(driver)
            }
        }
    }

    /// Every registered driver, in the order registered.
    public static var all: [any StoreDriver] { registered.withLock { $0 } }

    /// Every configured store's own parts of finance's report, in the order the drivers were registered.
    public static func reportTables(_ configuration: ClawbackConfiguration) -> [StoreReportTable] {
        all.flatMap { $0.reportTables(configuration) }
    }

    /// The driver of `store`; nil when none is registered (a run of it cannot start).
    public static func driver(for store: Store) -> (any StoreDriver)? {
        registered.withLock { drivers in drivers.first { $0.storeDescription.store == store } }
    }
}
