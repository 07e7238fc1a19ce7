import CFuzzer

/// SwiftPM links every executable target with `main` aliased to `<Target>_main` (so tests can import executables),
/// which hides libFuzzer's own `main`. Each harness therefore exports `<Target>_main` and hands over to libFuzzer's
/// driver here.
public func runFuzzer(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                      _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32 {
    var count = argc
    var vector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&count, &vector, callback)
}
