import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The nginx test server Jobs/local/lib/https-test-server.sh starts (plain HTTP/1.1, TLS with HTTP/2 from a
/// test CA, TLS with a certificate that CA does not vouch for). Tests fail, not skip, without it.
public enum TestHTTPServer {
    public struct NotConfigured: Error, CustomStringConvertible {
        let variable: String
        public var description: String {
            "\(variable) is not set: run the suite through Jobs/local/test.sh, which starts the nginx test server"
        }
    }

    static func variable(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw NotConfigured(variable: name)
        }
        return value
    }

    /// Plain HTTP/1.1.
    public static func plainURL() throws -> String { try variable("CLAWBACK_TEST_HTTP_URL") }
    /// TLS with ALPN h2 and http/1.1; certificate for localhost and 127.0.0.1 from the test CA.
    public static func tlsURL() throws -> String { try variable("CLAWBACK_TEST_HTTPS_URL") }
    /// TLS with a self-signed certificate for localhost, not from the test CA.
    public static func wrongCertificateURL() throws -> String { try variable("CLAWBACK_TEST_WRONG_TLS_URL") }
    /// PEM of the test CA.
    public static func caFile() throws -> String { try variable("CLAWBACK_TEST_CA_FILE") }
}

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes the handshake, then nothing is
/// ever answered, like a hung server. Closed on deinit.
public final class SilentListener {
    public let port: UInt16
    private let descriptor: Int32
    /// Connections taken by `holdConnections`, kept open (never answered) until deinit.
    private var held: [Int32] = []

    /// `backlog`: how many connections the kernel completes before anyone accepts them (0 with
    /// `fillBacklog`: a black-holed address).
    public init(backlog: Int32 = 64) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress -> Bool in
                bind(descriptor, socketAddress, length) == 0 && listen(descriptor, backlog) == 0
                    && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            if descriptor >= 0 { close(descriptor) }
            throw POSIXError(.EADDRNOTAVAIL)
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        for connection in held { close(connection) }
        close(descriptor)
    }

    /// Fills the accept queue with connections of its own (never accepted): the kernel then drops every further
    /// SYN, and a client's connect waits until its timeout, as to an address that black-holes its packets.
    public func fillBacklog() {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        for _ in 0..<4 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            held.append(filler)
        }
        usleep(100_000)
    }

    /// Accepts connections as clients open them, answering none, until `count` are held or `patience` has
    /// passed; returns how many it holds. Shows how many connections a client keeps open at once.
    public func holdConnections(expecting count: Int, patience: Duration) async throws -> Int {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        let deadline = ContinuousClock.now + patience
        while held.count < count && ContinuousClock.now < deadline {
            let connection = accept(descriptor, nil, nil)
            if connection >= 0 { held.append(connection) } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        return held.count
    }

    /// A port on which nothing listens (bound, then released): connecting to it is refused.
    public static func closedPort() throws -> UInt16 {
        let listener = try SilentListener()
        return listener.port
    }
}
