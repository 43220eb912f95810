import AppStore
import Dispatch
import Foundation
import Reports

/// The parsers that read what others send us, as fuzz targets: each takes any bytes and must neither
/// crash nor break its own promises. Used by the libFuzzer harness (`clawback-fuzz`, built by
/// Jobs/local/fuzz.sh) and by the regression test that replays every input kept in Tests/FuzzCorpus.
public enum FuzzTargets {
    /// The targets, by the name the harness and the corpus directories use.
    public static let names = ["jws", "receipt", "apple-json", "csv"]

    /// Apple's root: genuine seeds (Apple's signed vectors, judged at their signedDate) verify all the way,
    /// so mutations of them reach every later check too.
    static let verifier = SignedDataVerifier(trustedRoots: [AppleRootCertificates.rootCAG3])

    /// Runs `name` on `bytes`. A broken promise stops the process (the fuzzer's signal that it found one).
    public static func run(_ name: String, _ bytes: [UInt8]) async {
        switch name {
        case "jws": await jws(bytes)
        case "receipt": receipt(bytes)
        case "apple-json": appleJSON(bytes)
        case "csv": csv(bytes)
        default: fatalError("no fuzz target \(name); targets: \(names.joined(separator: ", "))")
        }
    }

    /// `run` for the harness, which calls from a plain thread.
    public static func runBlocking(_ name: String, _ bytes: [UInt8]) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await run(name, bytes)
            done.signal()
        }
        done.wait()
    }

    /// Every kind of signed data, bytes as text (invalid UTF-8 repaired, as an HTTP body decoder would).
    static func jws(_ bytes: [UInt8]) async {
        let text = String(decoding: bytes, as: UTF8.self)
        let app = AppExpectation()
        _ = try? await verifier.verifyTransaction(text, for: app)
        _ = try? await verifier.verifyNotification(text, for: app)
        _ = try? await verifier.verifyRenewalInfo(text, for: app)
    }

    /// Legacy receipts arrive base64 from a grant row: both receipt formats, ASN.1/PKCS#7 and old-style.
    static func receipt(_ bytes: [UInt8]) {
        _ = try? ReceiptParser.parse(base64: Data(bytes).base64EncodedString())
        _ = try? ReceiptParser.parse(base64: String(decoding: bytes, as: UTF8.self))
    }

    /// Apple's JSON: response bodies and the payloads inside signed data.
    static func appleJSON(_ bytes: [UInt8]) {
        _ = try? AppStoreServerAPIClient.decode(TransactionInfoResponse.self, from: bytes, endpoint: .transactionInfo)
        _ = try? AppStoreServerAPIClient.decode(HistoryResponse.self, from: bytes, endpoint: .transactionHistory)
        _ = try? AppStoreServerAPIClient.decode(RefundHistoryResponse.self, from: bytes, endpoint: .refundHistory)
        _ = try? AppStoreServerAPIClient.decode(NotificationHistoryResponse.self, from: bytes, endpoint: .notificationHistory)
        _ = try? decodePayload(TransactionPayload.self, from: bytes)
        _ = try? decodePayload(NotificationPayload.self, from: bytes)
        _ = try? decodePayload(RenewalInfoPayload.self, from: bytes)
    }

    /// The CSV writer's promises, for any cell text: one record per row whatever the text holds; the
    /// formula guard is reversible and leaves no cell starting with a trigger.
    static func csv(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        let guarded = FormulaGuard.neutralise(text)
        precondition(FormulaGuard.restore(guarded) == text, "the formula guard is not reversible")
        if let first = guarded.unicodeScalars.first {
            precondition(!["=", "+", "-", "@", "\t", "\r"].contains(first), "a guarded cell still starts with a formula trigger")
        }
        var writer = CSVWriter(byteOrderMark: false)
        writer.appendRow([.text(text), .text(String(text.reversed())), .integer(bytes.count)])
        var output: [UInt8] = []
        writer.drain { output += $0 }
        let cells = CSVRecordCheck.fields(output)
        precondition(cells?.count == 3, "a row did not read back as one record of 3 fields")
        precondition(cells?[0] == guarded, "a cell did not read back as written")
    }
}

/// Reads back exactly one RFC 4180 record ending in CRLF, or nil when the bytes are not one.
enum CSVRecordCheck {
    static func fields(_ bytes: [UInt8]) -> [String]? {
        var fields: [String] = []
        var field: [UInt8] = []
        var index = 0
        var quoted = false
        var atFieldStart = true
        while index < bytes.count {
            let byte = bytes[index]
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\"") {
                        field.append(byte)
                        index += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(byte)
                }
            } else if byte == UInt8(ascii: "\"") && atFieldStart {
                quoted = true
            } else if byte == UInt8(ascii: ",") {
                fields.append(String(decoding: field, as: UTF8.self))
                field = []
                atFieldStart = true
                index += 1
                continue
            } else if byte == 0x0D {
                guard index + 2 == bytes.count, bytes[index + 1] == 0x0A else { return nil }
                fields.append(String(decoding: field, as: UTF8.self))
                return fields
            } else if byte == 0x0A || byte == UInt8(ascii: "\"") {
                return nil
            } else {
                field.append(byte)
            }
            atFieldStart = false
            index += 1
        }
        return nil
    }
}
