import GooglePlay
import Job

/// Gathers the orders a run's grants ask about into Google's batches: the pipeline asks one grant at a time
/// (as it does Apple), and `orders.batchget` takes up to 1,000 ids a call. A batch leaves when it is full, or
/// `delay` after its first id when the grants stop coming (the end of the window, a stopping run), so no
/// grant waits on ids that will never come.
actor OrderBatcher {
    let client: OrdersClient
    let batchSize: Int
    let delay: Duration
    private var pending: [(orderID: String, answer: CheckedContinuation<OrderAnswer, Never>)] = []
    /// Counts the batches sent, so that a timer set for an earlier batch leaves a newer one alone.
    private var sent = 0

    init(client: OrdersClient, batchSize: Int = OrdersClient.maximumBatch, delay: Duration = .milliseconds(20)) {
        self.client = client
        self.batchSize = max(1, min(batchSize, OrdersClient.maximumBatch))
        self.delay = delay
    }

    /// Google's answer about `orderID`, asked in the batch it joins.
    func answer(_ orderID: String) async -> OrderAnswer {
        await withCheckedContinuation { continuation in
            pending.append((orderID, continuation))
            if pending.count >= batchSize {
                send()
            } else if pending.count == 1 {
                let batch = sent
                Task { [delay] in
                    try? await Task.sleep(for: delay)
                    self.sendIfStill(batch)
                }
            }
        }
    }

    private func sendIfStill(_ batch: Int) {
        if sent == batch, !pending.isEmpty { send() }
    }

    private func send() {
        let batch = pending
        pending = []
        sent += 1
        let client = self.client
        Task {
            let answers = await client.orders(batch.map(\.orderID))
            for (orderID, continuation) in batch {
                continuation.resume(returning: answers[orderID] ?? .unanswered("Google's answer for the batch left order \(orderID) out"))
            }
        }
    }
}
