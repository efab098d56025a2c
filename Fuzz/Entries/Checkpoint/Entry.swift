import CLibFuzzer
import FuzzTargets

// libFuzzer's two entry points.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzEntry.testOneInput(CheckpointFuzz.self, bytes, count)
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutableRawPointer?) -> Int32 {
    FuzzEntry.initialize(CheckpointFuzz.self)
}

// SwiftPM links an executable module's entry point, `<module>_main`, as the program's main, which leaves
// libFuzzer's own main out (this module is built with -parse-as-library): it hands over to libFuzzer's driver.
@_cdecl("FuzzCheckpoint_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc, argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
}
