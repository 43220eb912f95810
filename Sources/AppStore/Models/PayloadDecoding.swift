public import Foundation

extension KeyedDecodingContainer {
    /// Apple's timestamps: UNIX time in milliseconds, as a JSON number that may carry a fraction (Xcode).
    func decodeMilliseconds(forKey key: Key) throws -> Date? {
        guard let milliseconds = try decodeIfPresent(Double.self, forKey: key) else { return nil }
        guard milliseconds.isFinite else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not a finite number")
        }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }
}

extension Date {
    /// Whole milliseconds since 1970, as Apple counts them (exact for any date Apple signs).
    public var appleMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
}

/// Decodes `T` from a verified payload, turning a decoding failure into a verification error that names
/// the field.
package func decodePayload<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(VerificationError) -> T {
    if let fast = T.self as? any FlatJSONDecodable.Type, let value = fast.init(flatJSON: bytes) as? T { return value }
    do {
        return try JSONDecoder().decode(T.self, from: Data(bytes))
    } catch let DecodingError.typeMismatch(_, context), let DecodingError.dataCorrupted(context),
        let DecodingError.valueNotFound(_, context)
    {
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        throw VerificationError(.invalidPayload("\(path.isEmpty ? "the payload" : path): \(context.debugDescription)"))
    } catch {
        throw VerificationError(.invalidPayload("\(error)"))
    }
}
