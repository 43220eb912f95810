import Foundation

/// The key a report delivery signs with, from a file in AWS's credentials format: `key = value` lines,
/// optionally under `[profile]` sections (AWS's own `~/.aws/credentials`), with the `aws_` prefix or without.
/// A session token (`aws_session_token`) comes with temporary credentials, as STS and instance roles issue
/// them: S3 refuses their key without it.
struct S3Credentials: Equatable {
    var accessKeyID: String
    var secretAccessKey: String
    var sessionToken: String?

    /// Why a file's keys cannot be used, for a configuration error naming the file.
    struct Unusable: Error {
        let problem: String
    }

    /// Reads `profile`'s keys from `text`. A file without sections is one profile, whatever its name; a file
    /// with sections must have `profile`'s: another profile's keys are never taken instead.
    static func read(_ text: String, profile: String) throws(Unusable) -> S3Credentials {
        var sections: [String?: [String: String]] = [:]
        var section: String?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                sections[section, default: [:]] = sections[section] ?? [:]
                continue
            }
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let key = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            sections[section, default: [:]][key.hasPrefix("aws_") ? String(key.dropFirst(4)) : key] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        let named = sections.keys.compactMap { $0 }
        let values: [String: String]
        if named.isEmpty {
            values = sections[nil] ?? [:]
        } else if let chosen = sections[profile] {
            values = chosen
        } else {
            throw Unusable(problem: "has no [\(profile)] profile (it has \(named.sorted().map { "[\($0)]" }.joined(separator: ", ")))")
        }
        guard let access = values["access_key_id"], !access.isEmpty, let secret = values["secret_access_key"], !secret.isEmpty else {
            let place = named.isEmpty ? "" : " under [\(profile)]"
            throw Unusable(problem: "needs access_key_id = … and secret_access_key = … lines\(place)")
        }
        let token = values["session_token"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(accessKeyID: access, secretAccessKey: secret, sessionToken: token)
    }
}
