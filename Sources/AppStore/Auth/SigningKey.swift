public import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An In-App Purchase key (`AuthKey_XXXXXXXXXX.p8`): a PKCS#8 PEM P-256 private key. Its text never
/// appears in a description, log or error.
public struct SigningKey: Sendable, CustomStringConvertible {
    public let privateKey: P256.Signing.PrivateKey
    /// Where it came from, for messages.
    public let source: String

    public init(privateKey: P256.Signing.PrivateKey, source: String = "memory") {
        self.privateKey = privateKey
        self.source = source
    }

    /// Loads a `.p8` file, refusing one that others can read or its group can write: a leaked key lets
    /// anyone query the studio's purchases (and send consumption data) in its name. Group read is allowed
    /// (0640): that is how Kubernetes mounts a secret for a non-root container (`fsGroup`), and Debian's
    /// convention for private keys (`ssl-cert`).
    public static func load(path: String) throws(CredentialError) -> SigningKey {
        let permissions: Int
        switch CredentialFile.permissions(of: path) {
        case .success(let mode): permissions = mode
        case .failure(let problem): throw CredentialError(.keyFileUnreadable(path: path, reason: problem.reason))
        }
        guard CredentialFile.isPrivate(mode: permissions) else {
            throw CredentialError(.keyFileTooOpen(path: path, mode: String(permissions, radix: 8)))
        }
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CredentialError(.keyFileUnreadable(path: path, reason: "cannot read it as UTF-8 text"))
        }
        do {
            return SigningKey(privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem), source: path)
        } catch {
            // The PEM parser's error is not shown: it could quote the key's text.
            throw CredentialError(.keyFileInvalid(path: path))
        }
    }

    public var description: String { "P-256 key from \(source)" }
}

/// Why credentials could not be loaded. Never carries key material.
public struct CredentialError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        case keyFileUnreadable(path: String, reason: String)
        case keyFileTooOpen(path: String, mode: String)
        case keyFileInvalid(path: String)
        case secretFileTooOpen(path: String, mode: String)
        case secretFileUnreadable(path: String, reason: String)
    }

    public let reason: Reason

    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .keyFileUnreadable(let path, let reason): "cannot read the App Store key file \(path): \(reason)"
        case .keyFileTooOpen(let path, let mode):
            "the App Store key file \(path) is readable by others or writable by its group (mode \(mode)); run: chmod 600 \(path)"
        case .keyFileInvalid(let path):
            "the App Store key file \(path) is not a PKCS#8 PEM P-256 private key (an AuthKey_XXXXXXXXXX.p8 from App Store Connect)"
        case .secretFileTooOpen(let path, let mode):
            "the shared secret file \(path) is readable by others or writable by its group (mode \(mode)); run: chmod 600 \(path)"
        case .secretFileUnreadable(let path, let reason): "cannot read the shared secret file \(path): \(reason)"
        }
    }
}

/// The rule for files holding secrets (`.p8` keys, shared secrets): the owner may read and write, the
/// group may at most read, others nothing.
///
/// The mode judged is the file's, not a symbolic link's: Kubernetes mounts secrets as links into a
/// timestamped directory, and a link's own mode is always 0777.
public enum CredentialFile {
    public static func isPrivate(mode: Int) -> Bool { mode & 0o037 == 0 }

    /// The permission bits of the regular file at `path` (links followed), or why there is none.
    public static func permissions(of path: String) -> Result<Int, PermissionsProblem> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(PermissionsProblem(reason: String(cString: strerror(errno)))) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(PermissionsProblem(reason: "not a regular file")) }
        return .success(Int(info.st_mode & 0o777))
    }

    public struct PermissionsProblem: Error, Sendable {
        public let reason: String
    }
}
