import AppStore
import Foundation
import Job
import Reconciliation

/// What `clawback inspect` found: the kind of data, whether it is trusted (and if not why), and its fields.
struct Inspection {
    enum Kind: String {
        case transaction, notification
        case renewalInfo = "renewal info"
        case signedData = "signed data"
        case receipt
    }

    var kind: Kind
    var accepted: Bool
    var verified: Bool
    var reason: String?
    var fields: [(String, String)]
    var nested: [(String, Inspection)] = []
    var validatedAt: Date?

    static func inspect(_ input: String, verifier: SignedDataVerifier, app: AppExpectation) async -> Inspection {
        // Bodies as Apple sends them: a notification POST or a Get Transaction Info answer.
        if input.hasPrefix("{"), let object = try? JSONSerialization.jsonObject(with: Data(input.utf8)) as? [String: Any] {
            if let signed = object["signedPayload"] as? String {
                return await inspectJWS(signed, kind: .notification, verifier: verifier, app: app)
            }
            if let signed = object["signedTransactionInfo"] as? String {
                return await inspectJWS(signed, kind: .transaction, verifier: verifier, app: app)
            }
            return Inspection(
                kind: .signedData, accepted: false, verified: false,
                reason: "JSON without signedPayload or signedTransactionInfo", fields: [])
        }
        if input.split(separator: ".", omittingEmptySubsequences: false).count == 3 {
            return await inspectJWS(input, kind: nil, verifier: verifier, app: app)
        }
        return inspectReceipt(input)
    }

    static func inspectJWS(_ jws: String, kind known: Kind?, verifier: SignedDataVerifier, app: AppExpectation) async
        -> Inspection
    {
        let rawPayload = unverifiedPayload(jws)
        let kind = known ?? guessKind(rawPayload)
        var inspection = Inspection(kind: kind, accepted: false, verified: false, reason: nil, fields: flatten(rawPayload))
        do {
            let signature = try await verifier.verifySignature(jws)
            inspection.validatedAt = signature.validatedAt
            switch kind {
            case .notification:
                let verified = try await verifier.verifyNotification(jws, for: app)
                if let signed = verified.notification.data?.signedTransactionInfo {
                    inspection.nested.append(
                        (
                            "data.signedTransactionInfo",
                            await inspectJWS(
                                signed, kind: .transaction, verifier: verifier,
                                app: AppExpectation(bundleID: app.bundleID, environment: app.environment))
                        ))
                }
                if let signed = verified.notification.data?.signedRenewalInfo {
                    inspection.nested.append(
                        (
                            "data.signedRenewalInfo",
                            await inspectJWS(
                                signed, kind: .renewalInfo, verifier: verifier,
                                app: AppExpectation(environment: app.environment))
                        ))
                }
            case .transaction: _ = try await verifier.verifyTransaction(jws, for: app)
            case .renewalInfo: _ = try await verifier.verifyRenewalInfo(jws, for: app)
            case .signedData, .receipt: break
            }
            inspection.accepted = true
            inspection.verified = true
        } catch {
            inspection.reason = "\(error)"
        }
        return inspection
    }

    static func inspectReceipt(_ text: String) -> Inspection {
        do {
            switch try ReceiptParser.parse(base64: text) {
            case .appReceipt(let bundleID, let type, let purchases):
                var fields: [(String, String)] = [
                    ("bundleId", bundleID ?? "-"), ("receiptType", type ?? "-"),
                    ("in-app purchases", String(purchases.count)),
                ]
                for (index, purchase) in purchases.enumerated() {
                    fields.append(
                        (
                            "in_app[\(index)]",
                            "transaction \(purchase.transactionID), product \(purchase.productID ?? "-"), "
                                + "quantity \(purchase.quantity.map(String.init) ?? "-"), purchased \(purchase.purchaseDate ?? "-")"
                                + (purchase.cancellationDate.map { ", CANCELLED \($0)" } ?? "")
                        ))
                }
                return Inspection(
                    kind: .receipt, accepted: true, verified: false,
                    reason: Self.receiptNote, fields: fields)
            case .transactionReceipt(let transactionID, let original, let product):
                return Inspection(
                    kind: .receipt, accepted: true, verified: false,
                    reason: Self.receiptNote,
                    fields: [("transaction-id", transactionID), ("original-transaction-id", original ?? "-"), ("product-id", product ?? "-")])
            }
        } catch {
            return Inspection(
                kind: .receipt, accepted: false, verified: false,
                reason: "neither a JWS nor a readable receipt: \(error)", fields: [])
        }
    }

    static let receiptNote = "clawback reads receipts; Apple's verifyReceipt or the Server API is their authority"

    static func unverifiedPayload(_ jws: String) -> [String: Any] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64.decodeURL(parts[1]),
            let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { return [:] }
        return object
    }

    static func guessKind(_ payload: [String: Any]) -> Kind {
        if payload["notificationType"] != nil { return .notification }
        if payload["transactionId"] != nil { return .transaction }
        if payload["autoRenewStatus"] != nil || payload["autoRenewProductId"] != nil || payload["renewalDate"] != nil {
            return .renewalInfo
        }
        return .signedData
    }

    /// Dotted keys, sorted; millisecond dates shown as RFC 3339 too; nested JWSs shortened (shown verified below).
    static func flatten(_ object: [String: Any], prefix: String = "") -> [(String, String)] {
        var fields: [(String, String)] = []
        for key in object.keys.sorted() {
            let name = prefix.isEmpty ? key : prefix + "." + key
            switch object[key] {
            case let nested as [String: Any]: fields += flatten(nested, prefix: name)
            case let number as NSNumber where key.hasSuffix("Date") || key.hasSuffix("date"):
                let date = Date(timeIntervalSince1970: number.doubleValue / 1000)
                fields.append((name, "\(Timestamps.rfc3339(date)) (\(number))"))
            case let number as NSNumber where key == "revocationReason":
                fields.append((name, "\(number) (\(RevocationReason(rawValue: number.int32Value)))"))
            case let number as NSNumber where key == "revocationPercentage":
                fields.append((name, "\(number) (\(String(format: "%.3f", number.doubleValue / 1000))%)"))
            case let text as String where text.count > 200 && text.split(separator: ".").count == 3:
                fields.append((name, "<signed, \(text.utf8.count) bytes>"))
            case let value?: fields.append((name, "\(value)"))
            case nil: continue
            }
        }
        return fields
    }

    func table(rootDescription: String, indent: String = "") -> String {
        var lines: [String] = []
        let status: String
        if verified {
            status = "VERIFIED (ES256, chain to \(rootDescription) valid at \(validatedAt.map(Timestamps.rfc3339) ?? "now"))"
        } else if accepted {
            status = "READ, NOT VERIFIED (\(reason ?? ""))"
        } else {
            status = "REJECTED: \(reason ?? "unknown reason")"
        }
        lines.append("\(indent)\(kind.rawValue): \(status)")
        let width = min(40, fields.map(\.0.count).max() ?? 0)
        for (key, value) in fields {
            lines.append(indent + "  " + key.padding(toLength: max(width, key.count), withPad: " ", startingAt: 0) + "  " + value)
        }
        for (name, inner) in nested {
            lines.append("\(indent)  \(name):")
            lines.append(inner.table(rootDescription: rootDescription, indent: indent + "    "))
        }
        return lines.joined(separator: "\n")
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = [
            "kind": kind.rawValue, "verified": verified, "accepted": accepted,
            "fields": Dictionary(fields, uniquingKeysWith: { first, _ in first }),
        ]
        if let reason { object["reason"] = reason }
        if let validatedAt { object["validatedAt"] = Timestamps.rfc3339(validatedAt) }
        if !nested.isEmpty { object["nested"] = Dictionary(nested.map { ($0.0, $0.1.jsonObject) }, uniquingKeysWith: { first, _ in first }) }
        return object
    }

    func json() -> String {
        let data = (try? JSONSerialization.data(withJSONObject: jsonObject, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// RFC 3339 in UTC with milliseconds.
enum Timestamps {
    static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
