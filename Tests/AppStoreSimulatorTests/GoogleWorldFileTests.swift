import AppStoreSimulator
import Foundation
import Testing

/// The Google Play world as a file: written a line at a time (a world of millions of orders is gigabytes, and
/// one write(2) of it came out corrupt past 2 GiB), and read back as it was.
@Suite("Google Play's world file")
struct GoogleWorldFileTests {
    @Test("a generated world written line by line is the whole encoding, and reads back as the same world")
    func roundTrip() throws {
        let generated = try GooglePlayWorldGenerator.generate(
            orders: 3_000, start: Date() - 60 * 86_400, end: Date() - 3_600, refundRate: 0.2, seed: 5)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("google-world-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try generated.world.write(to: path)
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(written == (try generated.world.encoded()))
        // Read back, it is the same world (to the second, as the file keeps times) and writes the same bytes.
        let read = try GooglePlayWorld.parse(written)
        #expect(read.orders.count == 3_000 && Set(read.orders.keys) == Set(generated.world.orders.keys))
        #expect(read.packages == generated.world.packages)
        #expect(try read.encoded() == written)
    }
}
