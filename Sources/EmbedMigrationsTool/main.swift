// Build-time tool (run by the EmbedMigrations plugin): turns Migrations/NNNN_name.sql into a Swift source
// file, so the clawback binary carries its schema. Usage: EmbedMigrationsTool OUTPUT.swift FILE.sql...
import Foundation

struct ToolError: Error, CustomStringConvertible {
    let description: String
}

func migrationLiteral(path: String) throws -> (version: Int, source: String) {
    let fileName = (path as NSString).lastPathComponent
    let stem = (fileName as NSString).deletingPathExtension
    let parts = stem.split(separator: "_", maxSplits: 1)
    guard parts.count == 2, parts[0].count == 4, let version = Int(parts[0]), version > 0 else {
        throw ToolError(description: "\(path): a migration file is named NNNN_name.sql (four digits, from 0001)")
    }
    let sql = try String(contentsOfFile: path, encoding: .utf8)
    // A raw string literal whose delimiter cannot occur in the file.
    var hashes = "#"
    while sql.contains("\"\"\"" + hashes) || sql.contains("\"" + hashes) { hashes += "#" }
    let source = """
                Migration(
                    version: \(version), name: \(String(reflecting: String(parts[1]))),
                    sql: \(hashes)\"\"\"
        \(sql)
        \"\"\"\(hashes)),
        """
    return (version, source)
}

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedMigrationsTool OUTPUT.swift FILE.sql...\n".utf8))
    exit(64)
}
do {
    let migrations = try arguments.dropFirst().map(migrationLiteral).sorted { $0.version < $1.version }
    for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
        throw ToolError(
            description: "migration versions must be 0001, 0002, ... without gaps or repeats; found \(migration.version) at position \(index + 1)")
    }
    let file = """
        // Generated at build time by EmbedMigrationsTool from Migrations/*.sql. Do not edit.
        extension Migration {
            /// The migrations shipped with this build, in order.
            public static let embedded: [Migration] = [
        \(migrations.map(\.source).joined(separator: "\n"))
            ]
        }

        """
    try file.write(toFile: output, atomically: true, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}

#if FUZZING
    // Jobs/local/fuzz.sh builds with `-sanitize=fuzzer`, which SwiftPM applies to this build tool as well, so
    // libFuzzer is linked in and wants a fuzz target. The tool keeps its own entry point; this only satisfies
    // the linker.
    @_cdecl("LLVMFuzzerTestOneInput")
    func unusedFuzzTarget(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 { 0 }
#endif
