internal import CLibPQ

extension PostgresConnection {
    /// Bulk-loads rows with `COPY table (columns) FROM STDIN` in text format: the fastest way into
    /// PostgreSQL. `produce` appends rows to the writer, which sends them in 64 KiB pieces. If `produce`
    /// throws, the COPY is aborted (nothing is loaded) and its error is rethrown.
    /// - Parameters:
    ///   - table: the table, optionally schema-qualified (`clawback.grants`); each part is quoted.
    /// - Returns: the number of rows loaded.
    @discardableResult
    public func copyIn(
        table: String, columns: [String], _ produce: (inout PostgresCopyWriter) throws -> Void
    ) throws -> Int {
        let target = table.split(separator: ".", omittingEmptySubsequences: false)
            .map { PostgresQuery.quoteIdentifier(String($0)) }.joined(separator: ".")
        let columnList = columns.map(PostgresQuery.quoteIdentifier).joined(separator: ", ")
        let sql = "COPY \(target) (\(columnList)) FROM STDIN"
        try send(PostgresQuery(stringLiteral: sql), operation: "copy")

        var deadline = StatementDeadline(configuration)
        guard let start = try nextResult(&deadline, operation: "copy") else {
            throw PostgresError(.misuse, operation: "copy", message: "the server did not start the COPY", query: sql)
        }
        guard start.status == PGRES_COPY_IN else {
            let error = start.error(operation: "copy", query: sql)
            _ = try? collect(operation: "copy", query: sql)
            throw error
        }

        // The writer sends each full 64 KiB buffer as it fills, so memory stays bounded by one buffer.
        var writer = PostgresCopyWriter(columnCount: columns.count) { [unowned self] bytes throws(PostgresError) in
            try self.putCopyData(bytes)
        }
        var producerError: (any Error)?
        do {
            try produce(&writer)
            try writer.flush()
        } catch {
            producerError = error
        }
        let connection = try liveHandle(operation: "copy")
        if let producerError {
            _ = PQputCopyEnd(connection, "aborted by the client")
            _ = try? collect(operation: "copy", query: sql)
            throw producerError
        }
        guard PQputCopyEnd(connection, nil) == 1 else { throw sendFailed(operation: "copy") }
        return try collect(operation: "copy", query: sql).affectedRows
    }

    func putCopyData(_ bytes: [UInt8]) throws(PostgresError) {
        let connection = try liveHandle(operation: "copy")
        let sent = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(connection, $0.baseAddress, Int32($0.count)) }
        }
        guard sent == 1 else {
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
            throw PostgresError(.copyFailed, operation: "copy", message: message)
        }
    }
}

/// Sends rows for `copyIn` in PostgreSQL's COPY text format (tab-separated, `\N` for NULL, backslash
/// escapes for tab, newline, carriage return and backslash), 64 KiB at a time.
public struct PostgresCopyWriter {
    static let flushThreshold = 1 << 16
    let columnCount: Int
    private let send: ([UInt8]) throws(PostgresError) -> Void
    private var buffer: [UInt8] = []
    public private(set) var rowCount = 0

    init(columnCount: Int, send: @escaping ([UInt8]) throws(PostgresError) -> Void) {
        self.columnCount = columnCount
        self.send = send
        buffer.reserveCapacity(Self.flushThreshold + 4096)
    }

    /// Appends one row; `nil` is SQL NULL. The number of values must match the column list.
    public mutating func appendRow(_ values: [(any PostgresEncodable)?]) throws(PostgresError) {
        precondition(values.count == columnCount, "COPY row has \(values.count) values for \(columnCount) columns")
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.append(0x09) }
            if let value { Self.appendEscaped(value.postgresText, to: &buffer) } else { buffer += [0x5C, 0x4E] }
        }
        buffer.append(0x0A)
        rowCount += 1
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    mutating func flush() throws(PostgresError) {
        guard !buffer.isEmpty else { return }
        try send(buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    static func appendEscaped(_ text: String, to buffer: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case 0x5C: buffer += [0x5C, 0x5C]  // backslash
            case 0x09: buffer += [0x5C, 0x74]  // tab
            case 0x0A: buffer += [0x5C, 0x6E]  // newline
            case 0x0D: buffer += [0x5C, 0x72]  // carriage return
            default: buffer.append(byte)
            }
        }
    }
}
