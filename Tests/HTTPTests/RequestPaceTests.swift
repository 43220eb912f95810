import HTTP
import Testing

@Suite("RequestPace")
struct RequestPaceTests {
    @Test("callers waiting at once start no closer together than the pace allows")
    func spacesCallers() async {
        let pace = RequestPace(perSecond: 100)
        let clock = ContinuousClock()
        let started = clock.now
        // A sleep never ends early, so the spacing below is a lower bound whatever the machine's load.
        let starts = await withTaskGroup(of: Duration.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    await pace.wait()
                    return clock.now - started
                }
            }
            return await group.reduce(into: []) { $0.append($1) }.sorted()
        }
        for (index, start) in starts.enumerated() {
            #expect(start >= .milliseconds(10) * index - .milliseconds(1), "call \(index) started after \(start)")
        }
    }
}
