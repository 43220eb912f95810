import Crypto
public import X509

/// Trust anchors for App Store signed data.
public enum AppleRootCertificates {
    /// Apple Root CA - G3 (DER, base64), the root of every JWS the App Store signs. Embedded so that trust
    /// never depends on a file on the machine; published at https://www.apple.com/certificateauthority/.
    static let rootCAG3Base64 = [
        "MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQL",
        "DB1BcHBsZSBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMw",
        "MTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRp",
        "ZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49AgEGBSuBBAAiA2IA",
        "BJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtfTjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqX",
        "l5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8w",
        "DgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWT",
        "xnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM6BgD56KyKA==",
    ].joined()

    /// SHA-256 of Apple Root CA - G3's DER, as Apple publishes it. Checked by a test and at first use.
    public static let rootCAG3SHA256 = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    /// The DER bytes of Apple Root CA - G3.
    public static var rootCAG3DER: [UInt8] { Array(Base64.decodeStandard(rootCAG3Base64) ?? []) }

    /// Apple Root CA - G3, parsed. Traps if the embedded bytes were damaged: trusting anything else
    /// would be worse than not running.
    public static let rootCAG3: Certificate = {
        let der = rootCAG3DER
        let digest = SHA256.hash(data: der).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
        precondition(digest == rootCAG3SHA256, "the embedded Apple Root CA - G3 does not match its published fingerprint")
        do {
            return try Certificate(derEncoded: der)
        } catch {
            preconditionFailure("the embedded Apple Root CA - G3 does not parse: \(error)")
        }
    }()
}
