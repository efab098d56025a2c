import Foundation
import Model
import Testing

/// Which OpenBLAS core type a process pins before the library picks one for the CPU.
struct BLASCoreTypeTests {
    let avx2: Set<String> = ["sse2", "avx", "avx2", "fma"]

    @Test func anAVX2MachinePinsTheHaswellKernelsWhateverElseItHas() {
        #if arch(x86_64)
        #expect(BLASCoreType.wanted(environment: [:], cpuFlags: { avx2 }) == "Haswell")
        #expect(BLASCoreType.wanted(environment: [:], cpuFlags: { avx2.union(["avx512f", "avx512bw"]) }) == "Haswell")
        #endif
    }

    @Test func aCoreTypeTheUserSetOrNativeOrACPUWithoutAVX2IsLeftAlone() {
        #expect(BLASCoreType.wanted(environment: ["OPENBLAS_CORETYPE": "Zen"], cpuFlags: { avx2 }) == nil)
        #expect(BLASCoreType.wanted(environment: ["ADAPT_BLAS_CORETYPE": "native"], cpuFlags: { avx2 }) == nil)
        #expect(BLASCoreType.wanted(environment: [:], cpuFlags: { ["sse2", "avx"] }) == nil, "Haswell's kernels would not run")
    }

    /// A user sets the variable because OpenBLAS's own choice fails on their machine: only their kernels and
    /// older Intel ones (a subset of the instructions) may stand in for it.
    @Test func onlyTheUsersOwnAndOlderIntelKernelsAreSafeUnderACoreTypeTheUserSet() {
        #expect(BLASCoreType.isSafe("haswell", under: "Haswell"))
        #expect(BLASCoreType.isSafe("Sandybridge", under: "Haswell"))
        #expect(BLASCoreType.isSafe("Prescott", under: "SkylakeX"))
        #expect(BLASCoreType.isSafe("Sandybridge", under: "Zen"))
        #expect(!BLASCoreType.isSafe("Haswell", under: "Zen"))
        #expect(!BLASCoreType.isSafe("Zen", under: "Haswell"))
        #expect(!BLASCoreType.isSafe("SkylakeX", under: "Haswell"))
        #expect(!BLASCoreType.isSafe("Haswell", under: "Sandybridge"))
        #expect(!BLASCoreType.isSafe("Sandybridge", under: "Bogus"))
    }

    @Test func theUsersCoreTypeIsTheOneAdaptKeptAsideWhilePinningAnother() {
        #expect(BLASCoreType.userCoreType(environment: ["OPENBLAS_CORETYPE": "Zen"]) == "Zen")
        #expect(BLASCoreType.userCoreType(environment: ["OPENBLAS_CORETYPE": "Haswell", "ADAPT_BLAS_CORETYPE_ORIGIN": "policy"]) == nil)
        #expect(BLASCoreType.userCoreType(environment: ["OPENBLAS_CORETYPE": "Sandybridge", "ADAPT_BLAS_CORETYPE_ORIGIN": "resume",
                                                        "ADAPT_BLAS_CORETYPE_USER": "Haswell"]) == "Haswell")
        #expect(BLASCoreType.userCoreType(environment: [:]) == nil)
    }

    @Test func arithmeticDifferencesNameEveryPartThatMovesTheBits() {
        let recorded = BLASArithmetic(openblas: "OpenBLAS 0.3.21", coreType: "Haswell", threads: 1, kernels: "swift-simd-x86_64", pinned: true)
        #expect(recorded.difference(from: recorded) == nil)
        let other = BLASArithmetic(openblas: "OpenBLAS 0.3.26", coreType: "SkylakeX", threads: 2, kernels: "swift-simd-arm64", pinned: false)
        let reason = recorded.difference(from: other) ?? ""
        #expect(reason.contains("swift-simd-arm64 here"))
        #expect(reason.contains("OpenBLAS 0.3.26 here"))
        #expect(reason.contains("core type SkylakeX here, Haswell recorded"))
        #expect(reason.contains("2 BLAS thread(s) here, 1 recorded"))
    }

    /// This process was started without the variable (unless the environment set it), so OpenBLAS chose for
    /// the CPU: the arithmetic reports the library's own answer.
    @Test func theCurrentArithmeticIsReadFromTheLoadedLibrary() {
        let current = BLASArithmetic.current(threads: 1)
        #expect(current.openblas.hasPrefix("OpenBLAS 0."))
        #expect(!current.coreType.isEmpty)
        #expect(current.pinned == (ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"] != nil))
    }
}
