extension ClawbackConfiguration.Database {
    /// Reads `password_file`, when set, into `password`: a secret file (`SecretFile`: owner and group may
    /// read it, no one else; a mounted Kubernetes Secret, root:fsGroup mode 0440, passes), not empty.
    public mutating func loadPassword() throws(ConfigurationErrors) {
        guard let path = passwordFile else { return }
        let text = try SecretFile.text(path, field: "database.password_file")
        // The first line (LF or CRLF): a file written with `echo` or a secret manager ends with a newline that is not the password's.
        let password = text.split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard !password.isEmpty else {
            throw ConfigurationErrors(errors: [ConfigurationError(field: "database.password_file", problem: "\(path) is empty")])
        }
        self.password = password
    }
}
