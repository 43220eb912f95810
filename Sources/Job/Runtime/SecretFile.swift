import Foundation

/// A secret kept in a file that only its owner may write and only its owner and group may read (an App Store
/// shared secret, a Stripe key, the database password, an S3 key): the one place such a file's mode is
/// judged and its text read, so every secret file clawback takes is held to the same rule. The mode judged
/// is the file's, not a symbolic link's: Kubernetes mounts secrets as links into a timestamped directory,
/// and a link's own mode is always 0777.
public enum SecretFile {
    /// Why a secret file cannot be used. Never carries its text.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// Others may read it, or its group write it.
        case tooOpen(path: String, mode: String)
        case unreadable(path: String, reason: String)

        public var description: String {
            switch self {
            case .tooOpen(let path, let mode):
                "\(path) has mode \(mode): only its owner may write it and only the owner and group read it (0600, 0640, 0440)"
            case .unreadable(let path, let reason): "\(path): \(reason)"
            }
        }
    }

    /// The file's text, trimmed of surrounding white space and newlines.
    public static func read(_ path: String) throws(Problem) -> String {
        try text(path).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The file's text as it is.
    static func text(_ path: String) throws(Problem) -> String {
        let mode = try permissions(of: path)
        guard mode & 0o037 == 0 else { throw .tooOpen(path: path, mode: String(mode, radix: 8)) }
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path: path, reason: "it cannot be read by this user") }
        guard let text = String(data: data, encoding: .utf8) else { throw .unreadable(path: path, reason: "not UTF-8 text") }
        return text
    }

    /// The permission bits of the regular file at `path`, links followed (read through FileManager: the C
    /// `stat` structure's members are out of this module's reach under MemberImportVisibility).
    static func permissions(of path: String) throws(Problem) -> Int {
        let file = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard FileManager.default.fileExists(atPath: file) else { throw .unreadable(path: path, reason: "no such file") }
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: file)
        } catch {
            throw .unreadable(path: path, reason: "its attributes cannot be read by this user")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else { throw .unreadable(path: path, reason: "not a regular file") }
        guard let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue else {
            throw .unreadable(path: path, reason: "its permissions cannot be read")
        }
        return mode & 0o777
    }

    /// The file's permission bits in octal (`600`), for `config check`'s lines; nil when it has none to read.
    public static func mode(of path: String) -> String? { (try? permissions(of: path)).map { String($0, radix: 8) } }

    /// The file's text for the configuration field `field`: a problem is a `ConfigurationErrors` naming it.
    public static func text(_ path: String, field: String) throws(ConfigurationErrors) -> String {
        do {
            return try text(path)
        } catch {
            throw ConfigurationErrors(errors: [ConfigurationError(field: field, problem: error.description)])
        }
    }
}
