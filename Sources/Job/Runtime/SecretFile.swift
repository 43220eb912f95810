package import AppStore
import Foundation

/// A secret kept in a file that only its owner may write and only its owner and group may read (Apple's
/// shared secret, the database password, an S3 key): the one place such a file's mode is judged and its text
/// read, so every secret file clawback takes is held to the same rule.
public enum SecretFile {
    /// The file's text, trimmed of surrounding white space and newlines.
    package static func read(_ path: String) throws(CredentialError) -> String {
        try text(path).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The file's text as it is.
    static func text(_ path: String) throws(CredentialError) -> String {
        let mode: Int
        switch CredentialFile.permissions(of: path) {
        case .success(let permissions): mode = permissions
        case .failure(let problem): throw CredentialError(.secretFileUnreadable(path: path, reason: problem.reason))
        }
        guard CredentialFile.isPrivate(mode: mode) else { throw CredentialError(.secretFileTooOpen(path: path, mode: String(mode, radix: 8))) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CredentialError(.secretFileUnreadable(path: path, reason: "it cannot be read by this user"))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CredentialError(.secretFileUnreadable(path: path, reason: "not UTF-8 text"))
        }
        return text
    }

    /// The file's permission bits in octal (`600`), for `config check`'s lines; nil when it has none to read.
    public static func mode(of path: String) -> String? {
        try? CredentialFile.permissions(of: path).map { String($0, radix: 8) }.get()
    }

    /// The file's text for the configuration field `field`: a problem is a `ConfigurationErrors` naming it.
    public static func text(_ path: String, field: String) throws(ConfigurationErrors) -> String {
        do {
            return try text(path)
        } catch {
            let problem =
                switch error.reason {
                case .secretFileTooOpen(_, let mode):
                    "\(path) has mode \(mode): only its owner may write it and only the owner and group read it (0600, 0640, 0440)"
                case .secretFileUnreadable(_, let reason): "\(path): \(reason)"
                default: "\(error)"
                }
            throw ConfigurationErrors(errors: [ConfigurationError(field: field, problem: problem)])
        }
    }
}
