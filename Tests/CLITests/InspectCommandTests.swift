import Foundation
import TestSupport
import Testing

@Suite("clawback inspect, end to end")
struct InspectCommandTests {
    static let wizzmo = "real/transaction-com.wizzmo.app-2000001069194137-20251201T065953Z.jws"

    func path(_ file: String) throws -> String { try AppleVectors.directory().appendingPathComponent(file).path }

    @Test("a real signed transaction is verified and decoded into a table")
    func realTransaction() throws {
        let result = try CommandRunner.run("clawback", ["inspect", try path(Self.wizzmo)])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("transaction: VERIFIED"))
        #expect(result.standardOutput.contains("transactionId                2000001069194137"))
        #expect(result.standardOutput.contains("purchaseDate                 2025-12-01T02:52:24.000Z (1764557544000)"))
    }

    @Test("a tampered one is rejected with the reason and exit 65")
    func tampered() throws {
        let result = try CommandRunner.run(
            "clawback", ["inspect", try path("negative/derived-payload-tampered-transaction-com.wizzmo.app-2000001069194137.jws")])
        #expect(result.status == 65)
        #expect(result.standardOutput.contains("REJECTED: the ES256 signature does not verify"))
    }

    @Test("--bundle and --environment are checked; without them the values are only shown")
    func expectations() throws {
        let wrongBundle = try CommandRunner.run("clawback", ["inspect", try path(Self.wizzmo), "--bundle", "com.other"])
        #expect(wrongBundle.status == 65)
        #expect(wrongBundle.standardOutput.contains("bundle id is \"com.wizzmo.app\", expected \"com.other\""))
        let wrongEnvironment = try CommandRunner.run("clawback", ["inspect", try path(Self.wizzmo), "--environment", "Production"])
        #expect(wrongEnvironment.status == 65)
        #expect(wrongEnvironment.standardOutput.contains("environment is \"Sandbox\", expected \"Production\""))
        let right = try CommandRunner.run(
            "clawback", ["inspect", try path(Self.wizzmo), "--bundle", "com.wizzmo.app", "--environment", "Sandbox"])
        #expect(right.status == 0)
    }

    @Test("a notification body on standard input is verified with its nested transaction, as JSON")
    func notificationBody() throws {
        let jws = try AppleVectors.text("real/notification-REFUND-com.loki-project.loki-messenger-20251016T052202Z.jws")
        let result = try CommandRunner.run("clawback", ["inspect", "-", "--json"], input: "{\"signedPayload\":\"\(jws)\"}")
        #expect(result.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(object["verified"] as? Bool == true)
        #expect(object["kind"] as? String == "notification")
        let nested = try #require(object["nested"] as? [String: Any])
        let transaction = try #require(nested["data.signedTransactionInfo"] as? [String: Any])
        #expect(transaction["verified"] as? Bool == true)
        let fields = try #require(transaction["fields"] as? [String: String])
        #expect(fields["revocationDate"]?.hasPrefix("2025-10-16T05:19:59.000Z") == true)
    }

    @Test("--root replaces Apple's root: Apple's mock data verifies with the test CA, and real data then does not")
    func customRoot() throws {
        let testCA = try path("certs/testCA.der")
        let mock = try CommandRunner.run("clawback", ["inspect", try path("mock/transactionInfo"), "--root", testCA])
        #expect(mock.status == 0)
        let real = try CommandRunner.run("clawback", ["inspect", try path(Self.wizzmo), "--root", testCA])
        #expect(real.status == 65)
        #expect(real.standardOutput.contains("not trusted"))
    }

    @Test("receipts are read and their purchases listed; garbage is refused; a missing file exits 66")
    func receiptsAndGarbage() throws {
        let receipt = try CommandRunner.run("clawback", ["inspect", try path("xcode/xcode-app-receipt-with-transaction")])
        #expect(receipt.status == 0)
        #expect(receipt.standardOutput.contains("transaction 0, product pass.premium"))
        let legacy = try CommandRunner.run("clawback", ["inspect", try path("mock/legacyTransaction")])
        #expect(legacy.standardOutput.contains("33993399"))
        let garbage = try CommandRunner.run("clawback", ["inspect", "-"], input: "certainly not a receipt")
        #expect(garbage.status == 65)
        #expect(garbage.standardOutput.contains("neither a JWS nor a readable receipt"))
        #expect(try CommandRunner.run("clawback", ["inspect", "/nonexistent/file"]).status == 66)
    }
}
