public import Foundation
import _CryptoExtras

/// A Google service account's JSON key, as the Play Console's linked Cloud project issues it: who the account
/// is (`client_email`), the RSA key it signs its token requests with, and where it asks for tokens.
public struct ServiceAccountKey: Sendable {
    public let clientEmail: String
    public let privateKeyID: String?
    /// Where token requests are posted (Google's: https://oauth2.googleapis.com/token; the simulator's for
    /// rehearsals). The assertion's audience is Google's token endpoint whatever this says, as Google's
    /// own library does.
    public private(set) var tokenURI: String
    let privateKey: _RSA.Signing.PrivateKey

    /// Decodes a key file's bytes; `source` names the file in errors (never the key itself).
    public init(json: Data, source: String) throws(GooglePlayError) {
        struct File: Decodable {
            var type: String?
            var clientEmail: String?
            var privateKey: String?
            var privateKeyID: String?
            var tokenURI: String?

            enum CodingKeys: String, CodingKey {
                case type
                case clientEmail = "client_email"
                case privateKey = "private_key"
                case privateKeyID = "private_key_id"
                case tokenURI = "token_uri"
            }
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: json)
        } catch {
            throw GooglePlayError(.badKeyFile, "\(source): not a service account key file (JSON): \(error)")
        }
        guard file.type == "service_account" else {
            throw GooglePlayError(.badKeyFile, "\(source): \"type\" is \(file.type.map { "\"\($0)\"" } ?? "missing"), not \"service_account\"")
        }
        guard let email = file.clientEmail, !email.isEmpty else { throw GooglePlayError(.badKeyFile, "\(source): \"client_email\" is missing") }
        // The assertion is good for an hour at Google: it travels in clear text only to this machine.
        guard let tokenURI = file.tokenURI, tokenURI.hasPrefix("https://") || Self.isLoopback(tokenURI) else {
            throw GooglePlayError(.badKeyFile, "\(source): \"token_uri\" is missing, or not https:// (plain http only to this machine)")
        }
        guard let pem = file.privateKey else { throw GooglePlayError(.badKeyFile, "\(source): \"private_key\" is missing") }
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw GooglePlayError(.badKeyFile, "\(source): \"private_key\" is not an RSA private key of 2048 bits or more (\(error))")
        }
        clientEmail = email
        privateKeyID = file.privateKeyID
        self.tokenURI = tokenURI
    }

    /// The same key, its token requests posted to `tokenURI` instead (the simulator's, for rehearsals). The
    /// assertion's audience stays Google's token endpoint.
    public func askingTokens(at tokenURI: String) -> ServiceAccountKey {
        var copy = self
        copy.tokenURI = tokenURI
        return copy
    }

    static func isLoopback(_ uri: String) -> Bool {
        ["http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:", "http://localhost/", "http://[::1]:", "http://[::1]/"].contains {
            uri.hasPrefix($0)
        }
    }

    /// A key file's JSON for `privateKey` (tests and the simulator's generated worlds).
    public static func json(clientEmail: String, privateKeyPEM: String, privateKeyID: String, tokenURI: String) -> Data {
        let object: [String: String] = [
            "type": "service_account", "client_email": clientEmail, "private_key": privateKeyPEM, "private_key_id": privateKeyID,
            "token_uri": tokenURI,
        ]
        // swift-format-ignore: NeverUseForceTry
        return try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])  // strings only: cannot fail
    }
}
