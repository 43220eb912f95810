/// A node of the parsed YAML with its path, for typed reads that name the field when they fail.
struct ConfigNode {
    let value: Any?
    let path: String

    func child(_ key: String) -> ConfigNode {
        let dictionary = value as? [String: Any]
        return ConfigNode(value: dictionary?[key], path: path.isEmpty ? key : "\(path).\(key)")
    }

    var isPresent: Bool { value != nil && !(value is any NSNullLike) }

    /// Refuses keys this version does not know: a typo must not silently fall back to a default.
    func rejectUnknownKeys(_ allowed: Set<String>, into errors: inout [ConfigurationError]) {
        guard let dictionary = value as? [String: Any] else { return }
        for key in dictionary.keys.sorted() where !allowed.contains(key) {
            errors.append(
                ConfigurationError(
                    field: path.isEmpty ? key : "\(path).\(key)",
                    problem: "unknown field (known here: \(allowed.sorted().joined(separator: ", ")))"))
        }
    }

    func string(into errors: inout [ConfigurationError]) -> String? {
        guard isPresent else { return nil }
        if let text = value as? String { return text }
        if let number = value as? Int { return String(number) }
        errors.append(ConfigurationError(field: path, problem: "must be text"))
        return nil
    }

    func int(into errors: inout [ConfigurationError]) -> Int? {
        guard isPresent else { return nil }
        if let number = value as? Int { return number }
        if let text = value as? String, let number = Int(text) { return number }
        errors.append(ConfigurationError(field: path, problem: "must be a whole number"))
        return nil
    }

    func double(into errors: inout [ConfigurationError]) -> Double? {
        guard isPresent else { return nil }
        if let number = value as? Double { return number }
        if let number = value as? Int { return Double(number) }
        errors.append(ConfigurationError(field: path, problem: "must be a number"))
        return nil
    }

    func bool(into errors: inout [ConfigurationError]) -> Bool? {
        guard isPresent else { return nil }
        if let flag = value as? Bool { return flag }
        errors.append(ConfigurationError(field: path, problem: "must be true or false"))
        return nil
    }

    func list(into errors: inout [ConfigurationError]) -> [ConfigNode] {
        guard isPresent else { return [] }
        guard let items = value as? [Any] else {
            errors.append(ConfigurationError(field: path, problem: "must be a list"))
            return []
        }
        return items.enumerated().map { ConfigNode(value: $1, path: "\(path)[\($0)]") }
    }
}

/// Yams turns `~` / `null` into NSNull.
protocol NSNullLike {}
