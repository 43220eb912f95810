/// Runs `body` with `resource` and awaits `stop(resource)` however the body ends (returned or threw), so that
/// no simulator, server or directory outlives its test. The `with` fixtures of the test targets are built on it.
public func scoped<Resource, T>(
    _ resource: Resource, stop: (Resource) async -> Void, _ body: (Resource) async throws -> T
) async throws -> T {
    do {
        let result = try await body(resource)
        await stop(resource)
        return result
    } catch {
        await stop(resource)
        throw error
    }
}
