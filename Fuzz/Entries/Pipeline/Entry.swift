import FuzzTargets

// libFuzzer's two entry points; its own main calls them (this module is built with -parse-as-library).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    FuzzEntry.testOneInput(PipelineFuzz.self, bytes, count)
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutableRawPointer?) -> Int32 {
    FuzzEntry.initialize(PipelineFuzz.self)
}
