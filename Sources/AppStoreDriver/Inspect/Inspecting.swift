import AppStore
import Foundation
public import Job
import X509

/// `clawback inspect FILE`: verifies and decodes a signed transaction, notification, renewal info or
/// receipt, trusting Apple Root CA - G3 or the roots given. Returns the table (or JSON) to print; a verdict
/// of "not trusted" is thrown after it is shown (`Rejected`, 65).
public enum Inspecting {
    public struct Request: Sendable {
        /// A path, or `-` for standard input.
        public var file: String
        /// Root certificates (DER or PEM) to trust instead of Apple's.
        public var roots: [String]
        public var bundleID: String?
        public var environment: String?
        public var appAppleID: Int64?
        public var json: Bool

        public init(file: String, roots: [String], bundleID: String?, environment: String?, appAppleID: Int64?, json: Bool) {
            self.file = file
            self.roots = roots
            self.bundleID = bundleID
            self.environment = environment
            self.appAppleID = appAppleID
            self.json = json
        }
    }

    /// The data did not verify or could not be read as signed data (65).
    public struct Rejected: ExitStatusCarrying {
        public let reason: String
        public var exitStatus: ExitStatus { .dataError }
        public var description: String { "not trusted: \(reason)" }
    }

    /// The input cannot be read (66).
    public struct Unreadable: ExitStatusCarrying {
        public let file: String
        public let reason: String
        public var exitStatus: ExitStatus { .noInput }
        public var description: String { "inspect: cannot read \(file): \(reason)" }
    }

    /// A `--root` that is not a certificate (64: the command line is wrong).
    public struct BadRoot: ExitStatusCarrying {
        public let path: String
        public let reason: String
        public var exitStatus: ExitStatus { .usage }
        public var description: String { "--root \(path): \(reason)" }
    }

    /// The table (or JSON), then `Rejected` (65) when the data is not trusted.
    public static func run(_ request: Request) async throws -> CommandOutput {
        let input: String
        do {
            let data =
                request.file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: request.file))
            input = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw Unreadable(file: request.file, reason: error.localizedDescription)
        }
        var trusted: [Certificate] = []
        for path in request.roots {
            do {
                trusted.append(try AppleAppsFactory.certificate(at: path))
            } catch {
                throw BadRoot(path: path, reason: "\(error)")
            }
        }
        if trusted.isEmpty { trusted = [AppleRootCertificates.rootCAG3] }
        let expectation = AppExpectation(
            bundleID: request.bundleID, environment: request.environment.map(AppStoreEnvironment.init(rawValue:)), appAppleID: request.appAppleID)
        let report = await Inspection.inspect(input, verifier: SignedDataVerifier(trustedRoots: trusted), app: expectation)
        let text =
            request.json
            ? report.json() : report.table(rootDescription: request.roots.isEmpty ? "Apple Root CA - G3" : request.roots.joined(separator: ", "))
        return CommandOutput([text], failure: report.accepted ? nil : Rejected(reason: report.reason ?? "rejected"))
    }
}
