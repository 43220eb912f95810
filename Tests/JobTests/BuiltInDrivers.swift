import AppStoreDriver
import GooglePlayDriver
import Job
import StripeDriver

/// The built-in stores' drivers, registered as the executable registers them (`Clawback.main`): each store's
/// sections of the configuration file are read by its driver, so a test reads a file after registering them.
enum BuiltInDrivers {
    static let registered: Void = {
        for driver: any StoreDriver in [AppStoreDriver(), GooglePlayDriver(), StripeDriver()] { StoreDrivers.register(driver) }
    }()
}

extension ClawbackConfiguration {
    /// `parse(yaml:baseDirectory:)` with the built-in stores' drivers registered.
    static func parseWithStores(yaml text: String, baseDirectory: String? = nil) throws(ConfigurationErrors) -> ClawbackConfiguration {
        BuiltInDrivers.registered
        return try parse(yaml: text, baseDirectory: baseDirectory)
    }

    /// `load(path:)` with the built-in stores' drivers registered.
    static func loadWithStores(path: String) throws(ConfigurationErrors) -> ClawbackConfiguration {
        BuiltInDrivers.registered
        return try load(path: path)
    }
}
