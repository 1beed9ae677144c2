import Foundation

#if FUZZING
import CFuzzerDriver
#endif

/// One input for libFuzzer. Also exported under libFuzzer's conventional name, which its runtime's own `main`
/// object refers to (SwiftPM's entry point below is the `main` that runs).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.check(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// `logship-fuzz`: built by `make fuzz` with libFuzzer (`-sanitize=fuzzer,address -D FUZZING`), it fuzzes the
/// checks in ``FuzzTarget`` and takes libFuzzer's options (`-runs=N`, a corpus directory). Built plainly, it replays
/// the files named on its command line, such as a crash libFuzzer saved, through the same checks.
@main
enum FuzzEntry {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
        #else
        for path in CommandLine.arguments.dropFirst() {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)) else {
                FileHandle.standardError.write(Data("logship-fuzz: cannot read \(path)\n".utf8))
                exit(1)
            }
            FuzzTarget.check(Array(data))
            print("\(path): ok")
        }
        #endif
    }
}
