import Foundation
import FuzzTargets

// Built two ways. By Jobs/local/fuzz.sh with `-sanitize=fuzzer,address -DFUZZING`: the entry point hands
// control to libFuzzer's driver, which calls LLVMFuzzerTestOneInput with the target named by
// $CLAWBACK_FUZZ_TARGET. Normally: a replayer, `clawback-fuzz TARGET FILE...`, for reproducing a crasher
// under a debugger.

/// The target this fuzzing process exercises, read once.
let fuzzTarget = ProcessInfo.processInfo.environment["CLAWBACK_FUZZ_TARGET"] ?? "jws"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTargets.runBlocking(fuzzTarget, bytes)
    return 0
}

#if FUZZING
    // swift-format-ignore: AlwaysUseLowerCamelCase
    // libFuzzer's C entry point, named as libFuzzer exports it.
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32

    /// SwiftPM links an executable's entry point as `<module>_main` (it renames `main` so tests can link the
    /// module): that symbol starts libFuzzer here instead of libFuzzer's own `main`.
    @_cdecl("clawback_fuzz_main")
    public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var argc = argc
        var argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
    }
#else
    @main
    struct Replay {
        static func main() async {
            let arguments = CommandLine.arguments.dropFirst()
            guard let target = arguments.first, FuzzTargets.names.contains(target), arguments.count >= 2 else {
                FileHandle.standardError.write(Data("usage: clawback-fuzz \(FuzzTargets.names.joined(separator: "|")) FILE...\n".utf8))
                exit(64)
            }
            for path in arguments.dropFirst() {
                guard let data = FileManager.default.contents(atPath: path) else {
                    FileHandle.standardError.write(Data("clawback-fuzz: cannot read \(path)\n".utf8))
                    exit(66)
                }
                await FuzzTargets.run(target, Array(data))
                print("ok \(path)")
            }
        }
    }
#endif
