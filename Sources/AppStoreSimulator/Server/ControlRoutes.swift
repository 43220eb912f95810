import Foundation

extension Simulator {
    /// `/simulator/...`: health, statistics, the root certificate, faults, world updates and the consumption
    /// answers received, for tests,
    /// rehearsals and the benchmark. Not part of Apple's API.
    func control(_ request: SimulatorRequest) -> SimulatorReply {
        switch (request.method, request.path) {
        case ("GET", "/simulator/health"):
            return .json(200, Array("{\"status\":\"ok\",\"transactions\":\(world.transactions.count),\"apps\":\(world.apps.count)}".utf8))
        case ("GET", "/simulator/stats"):
            return .json(200, Route.object(stats.snapshot))
        case ("DELETE", "/simulator/stats"):
            stats.reset()
            return .respond(status: 204, headers: [], body: [])
        case ("GET", "/simulator/consumption-answers"):
            // Every Send Consumption Information call accepted, in arrival order (what a rehearsal checks).
            let encoder = WorldFile.encoder()
            return .json(200, Array((try? encoder.encode(consumptionAnswers)) ?? Data("[]".utf8)))
        case ("GET", "/simulator/root.pem"):
            return .respond(status: 200, headers: [("Content-Type", "application/x-pem-file")], body: Array(((try? chain.rootPEM()) ?? "").utf8))
        case ("GET", "/simulator/faults"):
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return .json(200, Array((try? encoder.encode(faults)) ?? Data()))
        case ("PUT", "/simulator/faults"):
            do {
                setFaults(try JSONDecoder().decode(FaultPlan.self, from: Data(request.body)))
                return .respond(status: 204, headers: [], body: [])
            } catch {
                return .json(400, Route.object(["error": "not a fault plan: \(error)"]))
            }
        case ("POST", "/simulator/world"):
            do {
                let lines = try WorldFile.parse(Data(request.body))
                update(lines)
                return .json(200, Route.object(["updated": lines.count]))
            } catch {
                return .json(400, Route.object(["error": "\(error)"]))
            }
        default:
            return .respond(status: 404, headers: [], body: [])
        }
    }
}
