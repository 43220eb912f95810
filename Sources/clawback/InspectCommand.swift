import AppStoreDriver
import ArgumentParser
import Job

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Verify and decode a signed transaction, notification, renewal info or receipt.",
        usage: "clawback inspect [<options>] <file>",
        discussion: """
            Reads a JWS (signedTransactionInfo, signedRenewalInfo, a notification's signedPayload), a notification \
            body {"signedPayload": ...}, a Get Transaction Info body {"signedTransactionInfo": ...}, or a base64 \
            receipt, from FILE or standard input (-).

            Signed data is verified like Apple's libraries do it: ES256, x5c chain to Apple Root CA - G3 (embedded; \
            --root replaces it) valid at the payload's signedDate, Apple's marker OIDs, the signature; a notification's \
            nested transaction and renewal info too. With --bundle / --environment / --app-apple-id those are checked \
            as well; without them they are shown.

            Receipts carry no signature clawback checks (Apple's verifyReceipt is their authority): their purchases \
            are listed as read.

            Exit status: 0 verified (or receipt read); 65 rejected or unreadable data, with the reason; 66 input not \
            readable; 64 usage.
            """)

    @Argument(help: "The file to inspect, or - for standard input.")
    var file: String

    @Option(name: .customLong("root"), help: "Trust this root certificate (DER or PEM) instead of Apple's; repeatable.")
    var roots: [String] = []

    @Option(help: "Require this bundle id.")
    var bundle: String?

    @Option(help: "Require this environment: Production or Sandbox.")
    var environment: String?

    @Option(help: "Require this app Apple id (production notifications).")
    var appAppleID: Int64?

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func run() async throws {
        try await Inspecting.run(.init(file: file, roots: roots, bundleID: bundle, environment: environment, appAppleID: appAppleID, json: json))
            .emit()
    }
}
