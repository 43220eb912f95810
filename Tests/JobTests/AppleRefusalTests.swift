import HTTP
import Testing

@testable import AppStore
@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// A refund-request answer Apple refuses is settled `refused` for good; anything else that answers 400 (a
/// proxy's HTML page, a load balancer's JSON) must not be, or the request would never be answered.
@Suite("Apple's refusals told apart from other 400s")
struct AppleRefusalTests {
    static func decision(status: Int, body: String, contentType: String? = nil) -> Bool {
        let response = HTTPResponse(status: status, headers: contentType.map { ["Content-Type": $0] } ?? [:], body: Array(body.utf8))
        guard case .apple(let status, let code, let message) = AppStoreServerAPIClient.appleError(response, endpoint: "test").kind else {
            Issue.record("not an Apple error")
            return false
        }
        return RefundRequestWork.isApplesRefusal(status: status, code: code, message: message)
    }

    @Test("final: Apple's 400 with its code, its bare 400, 404 4040010; retried: HTML, JSON without Apple's fields, a proxy's 404, 5xx")
    func refusals() {
        #expect(Self.decision(status: 400, body: #"{"errorCode":4000035,"errorMessage":"Invalid customer consent."}"#))
        #expect(Self.decision(status: 400, body: ""))
        #expect(Self.decision(status: 400, body: "\r\n"))
        #expect(Self.decision(status: 404, body: #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#))
        #expect(!Self.decision(status: 400, body: "<html><body><h1>400 Bad Request</h1>nginx</body></html>", contentType: "text/html"))
        #expect(!Self.decision(status: 400, body: #"{"message":"Bad Request","requestId":"abc"}"#, contentType: "application/json"))
        #expect(!Self.decision(status: 400, body: "{}"))
        #expect(!Self.decision(status: 404, body: "<html>Not Found</html>"))
        #expect(!Self.decision(status: 503, body: ""))
    }
}
