import AppStoreSimulator
import Foundation
import Stripe
import Testing

@testable import StripeDriver

/// The monthly run holds its listed charges compactly (`ListedCharges`): whatever they are, each payment's
/// charges come back exactly as they were read, in order.
@Suite("Stripe: the listed charges come back as read")
struct StripeListedChargesTests {
    @Test("one or several charges a payment, ids and words of every length, over many chunks, come back equal and in order")
    func roundTrip() {
        var random = SeededGenerator(seed: 46)
        let statuses = ["succeeded", "pending", "failed", "requires_review", ""]
        let currencies = ["eur", "jpy", "usd", "bhd", "eurx", "", "€"]
        func id(_ prefix: String) -> String {
            let length = Int.random(in: 0...40, using: &random)
            let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_é")
            return prefix + String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
        }
        var expected: [String: [Charge]] = [:]
        var listed = ListedCharges(chunkSize: 256)
        for _ in 0..<3_000 {
            // A tenth of the charges belong to a payment already listed (a retried payment).
            let payment =
                Bool.random(using: &random) && Int.random(in: 0..<5, using: &random) == 0 && !expected.isEmpty
                ? expected.keys.sorted()[Int.random(in: 0..<expected.count, using: &random)] : id("pi_")
            let charge = Charge(
                id: id("ch_"), amount: Int64.random(in: -5...Int64.max, using: &random), amountCaptured: Int64.random(in: 0...10_000, using: &random),
                amountRefunded: Int64.random(in: 0...10_000, using: &random),
                currency: currencies[Int.random(in: 0..<currencies.count, using: &random)],
                status: statuses[Int.random(in: 0..<statuses.count, using: &random)], paid: Bool.random(using: &random),
                captured: Bool.random(using: &random), paymentIntent: payment,
                created: Date(timeIntervalSince1970: TimeInterval(Int64.random(in: 0...2_000_000_000, using: &random))),
                livemode: Bool.random(using: &random))
            expected[payment, default: []].append(charge)
            listed.add(charge, of: payment)
        }
        listed.seal()
        #expect(expected.values.contains { $0.count > 1 } && expected.count > 2_000)
        for (payment, charges) in expected {
            #expect(listed.charges(of: payment) == charges, "\(payment)")
        }
        #expect(listed.charges(of: "pi_never_listed") == nil)
    }

    @Test("inline text keeps any text of up to 32 bytes exactly, and refuses longer")
    func inlineText() {
        for text in ["", "pi_3Q", "pi_3QabcdefghijklmnopqrstuvwxyZ", String(repeating: "é", count: 16), "a\u{0}b"] {
            #expect(InlineText(text)?.text == text)
        }
        #expect(InlineText(String(repeating: "x", count: 33)) == nil)
        #expect(InlineText("pi_1") != InlineText("pi_1\u{0}"), "the count tells a trailing NUL apart")
    }
}
