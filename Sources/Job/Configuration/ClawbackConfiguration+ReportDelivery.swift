import Foundation

/// `reports.delivery`: where finance receives the reports without a shell on the job's machine. Today one
/// kind, an S3-compatible bucket (AWS S3, MinIO, Ceph, R2, GCS's interoperability endpoint), reached through
/// libcurl's AWS Signature Version 4.
extension ClawbackConfiguration {
    public struct S3Delivery: Sendable, Equatable {
        /// The service's base URL, e.g. `https://s3.eu-west-1.amazonaws.com` (https, or http to loopback only).
        public var endpoint: String
        /// The signing region, e.g. `eu-west-1` (`us-east-1` for most S3-compatible servers).
        public var region: String
        public var bucket: String
        /// Prepended to each file name, e.g. `clawback/` (then `clawback/<file>`); may be empty.
        public var prefix: String
        /// A file with `access_key_id = …` and `secret_access_key = …` lines (the `aws_`-prefixed names of
        /// AWS's own credentials file work too), readable by no one but its owner and group.
        public var credentialsFile: String
        /// The `[profile]` of a credentials file with sections (AWS's own); `default` unless configured.
        public var profile: String
        /// `https://bucket.host/key` instead of `https://host/bucket/key`.
        public var virtualHostedStyle: Bool

        public init(
            endpoint: String, region: String, bucket: String, prefix: String = "", credentialsFile: String, profile: String = "default",
            virtualHostedStyle: Bool = false
        ) {
            self.endpoint = endpoint
            self.region = region
            self.bucket = bucket
            self.prefix = prefix
            self.credentialsFile = credentialsFile
            self.profile = profile
            self.virtualHostedStyle = virtualHostedStyle
        }

        /// Whether `bucket` can be the first label of a host name as virtual-hosted addressing needs: lowercase
        /// letters, digits and hyphens, 3 to 63 of them, starting and ending with a letter or digit. A dot
        /// would also break TLS (the certificate's `*.host` covers one label), an underscore or an uppercase
        /// letter (allowed in old buckets) is no host name: those buckets need `url_style: path`.
        public static func isHostLabel(_ bucket: String) -> Bool {
            let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-")
            return (3...63).contains(bucket.count) && bucket.allSatisfy(allowed.contains) && bucket.first != "-" && bucket.last != "-"
        }
    }

    static func parseReportDelivery(
        _ node: ConfigNode, into reports: inout Reports, errors: inout [ConfigurationError], resolve: (String?) -> String?
    ) {
        node.rejectUnknownKeys(["s3"], into: &errors)
        let s3 = node.child("s3")
        guard s3.isPresent else { return }
        s3.rejectUnknownKeys(["endpoint", "region", "bucket", "prefix", "credentials_file", "profile", "url_style"], into: &errors)
        func required(_ key: String) -> String? {
            let node = s3.child(key)
            guard node.isPresent else {
                errors.append(ConfigurationError(field: node.path, problem: "is required"))
                return nil
            }
            return node.string(into: &errors)
        }
        let endpoint = required("endpoint")
        let region = required("region")
        let bucket = required("bucket")
        let credentials = resolve(required("credentials_file"))
        let prefix = s3.child("prefix").string(into: &errors) ?? ""
        let profile = s3.child("profile").string(into: &errors) ?? "default"
        if profile.isEmpty || profile.contains("]") {
            errors.append(ConfigurationError(field: "reports.delivery.s3.profile", problem: "must be a profile name, as in [name]"))
        }
        var virtualHosted = false
        if let style = s3.child("url_style").string(into: &errors) {
            switch style {
            case "path": virtualHosted = false
            case "virtual_hosted": virtualHosted = true
            default:
                errors.append(ConfigurationError(field: "reports.delivery.s3.url_style", problem: "is \(style); expected path or virtual_hosted"))
            }
        }
        if let endpoint, let problem = transportProblem(endpoint) {
            errors.append(ConfigurationError(field: "reports.delivery.s3.endpoint", problem: problem))
        }
        if let bucket, bucket.isEmpty || bucket.contains("/") {
            errors.append(ConfigurationError(field: "reports.delivery.s3.bucket", problem: "must be a bucket name, without '/'"))
        }
        if virtualHosted, let bucket, !bucket.isEmpty, !S3Delivery.isHostLabel(bucket) {
            errors.append(
                ConfigurationError(
                    field: "reports.delivery.s3.url_style",
                    problem:
                        "is virtual_hosted, but bucket \(bucket) cannot be a host name (a dot, an underscore, an uppercase letter, or its length): use url_style: path"
                ))
        }
        if prefix.hasPrefix("/") {
            errors.append(ConfigurationError(field: "reports.delivery.s3.prefix", problem: "must not start with '/'"))
        }
        guard let endpoint, let region, let bucket, let credentials else { return }
        reports.s3 = S3Delivery(
            endpoint: endpoint, region: region, bucket: bucket, prefix: prefix, credentialsFile: credentials, profile: profile,
            virtualHostedStyle: virtualHosted)
    }
}
