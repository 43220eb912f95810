import Testing

@testable import HTTP

@Suite("A response's header lines, read on their bytes")
struct HeaderLineTests {
    private func apply(_ lines: [String], to headers: HTTPHeaders = HTTPHeaders()) -> HTTPHeaders {
        var headers = headers
        for line in lines {
            Array(line.utf8).withUnsafeBufferPointer { HeaderLine($0).apply(to: &headers) }
        }
        return headers
    }

    @Test("names and values are trimmed of spaces, tabs and the line's end; a value keeps its inner spaces and colons")
    func fields() {
        let headers = apply(["Content-Type: application/json\r\n", " Retry-After :\t7 \r\n", "Date: Thu, 26 Nov 2026 05:00:00 GMT\r\n"])
        #expect(headers.fields.map(\.name) == ["Content-Type", "Retry-After", "Date"])
        #expect(headers["retry-after"] == "7")
        #expect(headers["DATE"] == "Thu, 26 Nov 2026 05:00:00 GMT")
        // A server ending its lines with a bare LF: the value is still just the number.
        #expect(apply(["Retry-After: 7\n"])["Retry-After"] == "7")
    }

    @Test("a status line starts a fresh set (after 100 Continue); the blank line, a line without a colon and an empty name add nothing")
    func statusAndNoise() {
        let headers = apply([
            "HTTP/1.1 100 Continue\r\n", "X-Early: yes\r\n", "\r\n", "HTTP/1.1 200 OK\r\n", "garbage\r\n", ": no name\r\n",
            "X-Empty:\r\n", "\r\n",
        ])
        #expect(headers.fields.map(\.name) == ["X-Empty"])
        #expect(headers["X-Empty"] == "")
        #expect(headers["X-Early"] == nil)
    }

    @Test("bytes that are not UTF-8 are kept, repaired, rather than dropping the field")
    func invalidUTF8() {
        var headers = HTTPHeaders()
        let line: [UInt8] = Array("X-Odd: a".utf8) + [0xFF] + Array("b\r\n".utf8)
        line.withUnsafeBufferPointer { HeaderLine($0).apply(to: &headers) }
        #expect(headers["X-Odd"] == "a\u{FFFD}b")
    }
}
