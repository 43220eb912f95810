import Foundation
import Storage

/// `clawback refund-requests show KEY`: one refund request by notificationUUID, or every request of a
/// transaction, with the answer sent; as tables or one JSON array.
public enum RefundRequestLookup {
    /// Nothing has that notificationUUID or transaction id (66).
    public struct NotFound: ExitStatusCarrying {
        public let key: String
        public var exitStatus: ExitStatus { .noInput }
        public var description: String { "no refund request has notificationUUID or transaction id \(key)" }
    }

    public static func show(_ key: String, json: Bool, _ context: CommandContext) throws -> String {
        let connection = try context.connect()
        let requests = try RefundRequestStore.show(key, on: connection)
        guard !requests.isEmpty else { throw NotFound(key: key) }
        if json {
            let objects = requests.map { Dictionary($0, uniquingKeysWith: { first, _ in first }) }
            let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .prettyPrinted])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
        return requests.map { TextTable.render($0.map { [$0.0, $0.1] }) }.joined(separator: "\n\n")
    }
}
