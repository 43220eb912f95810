/// What a command prints on stdout, and the error it ends with once that is printed: the report written but
/// not delivered, the pending count shown but its metrics file not written, the migrations listed with one
/// changed, the signed data shown but not trusted. The operator sees the whole output either way.
public struct CommandOutput {
    public var lines: [String]
    /// Thrown by `emit()` after the lines are printed; nil: the command succeeded.
    public var failure: (any ExitStatusCarrying)?

    public init(_ lines: [String], failure: (any ExitStatusCarrying)? = nil) {
        self.lines = lines
        self.failure = failure
    }

    /// Prints the lines, then throws the failure if there is one.
    public func emit() throws {
        for line in lines { print(line) }
        if let failure { throw failure }
    }
}
