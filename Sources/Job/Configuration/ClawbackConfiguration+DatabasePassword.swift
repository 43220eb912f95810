import AppStore
import Foundation

extension ClawbackConfiguration.Database {
    /// Reads `password_file`, when set, into `password`, refusing a file others may read (as Apple's key
    /// files are refused) and an empty one. A mounted Kubernetes Secret (root:fsGroup, mode 0440) passes.
    public mutating func loadPassword() throws(ConfigurationErrors) {
        guard let path = passwordFile else { return }
        func refuse(_ problem: String) -> ConfigurationErrors {
            ConfigurationErrors(errors: [ConfigurationError(field: "database.password_file", problem: problem)])
        }
        switch CredentialFile.permissions(of: path) {
        case .failure(let problem): throw refuse("\(path): \(problem.reason)")
        case .success(let mode) where !CredentialFile.isPrivate(mode: mode):
            throw refuse(
                "\(path) has mode \(String(mode, radix: 8)): only its owner may write it and only the owner and group read it (0600, 0640, 0440)")
        case .success: break
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw refuse("\(path) cannot be read by this user") }
        // The first line (LF or CRLF): a file written with `echo` or a secret manager ends with a newline that is not the password's.
        let password =
            String(decoding: data, as: UTF8.self).split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: \.isNewline).first
            .map(String.init) ?? ""
        guard !password.isEmpty else { throw refuse("\(path) is empty") }
        self.password = password
    }
}
