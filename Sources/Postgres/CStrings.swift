#if canImport(Glibc)
    internal import Glibc
#endif

/// Calls `body` with a C array of C strings that lives exactly as long as the call (libpq copies what it keeps).
func withCStringArray<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    withOptionalCStringArray(strings.map { Optional($0) }, body)
}

/// As `withCStringArray`, with `nil` passed through as a NULL pointer (SQL NULL for bind values).
/// The array is NULL-terminated, which PQconnectdbParams needs and PQexecParams ignores.
func withOptionalCStringArray<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let owned: [UnsafeMutablePointer<CChar>?] = strings.map { string in
        string.map { value in
            // A failed copy must never turn a value into SQL NULL; there is no way on without memory.
            guard let copy = strdup(value) else { fatalError("out of memory copying a bind parameter") }
            return copy
        }
    }
    defer { for pointer in owned { free(pointer) } }
    return body(owned.map { $0.map { UnsafePointer($0) } } + [nil])
}
