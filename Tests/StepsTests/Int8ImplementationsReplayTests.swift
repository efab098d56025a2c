import AdaptCore
import Foundation
import JobQueue
import Model
import Testing
import TestSupport

/// A night whose train and eval steps multiplied with the int8 forward kernels (`int8-v1`) replays bit for bit
/// whichever implementation computes them: recorded with the AVX-512 VNNI kernels, replayed with the AVX2 ones
/// and with the portable ones (`ADAPT_PROMPT_KERNELS`), as a laptop or a CI runner without VNNI would.
@Suite(.serialized) struct Int8ImplementationsReplayTests {
    static let flags = BLASCoreType.cpuFlags()

    @Test(.enabled(if: ["avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx2", "fma", "f16c"].allSatisfy(flags.contains),
                   "records with the AVX-512 VNNI kernels and replays with the AVX2 ones: needs a CPU with both"))
    func aNightRecordedWithTheVNNIKernelsReplaysEqualWithTheAVX2AndThePortableOnes() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"], environment: ["ADAPT_PROMPT_KERNELS": "avx512vnni"]))
        let manifest = try fixture.queue().run(try #require(RunID.parse(run))).manifest
        #expect(manifest["arithmetic"]?["train"]?["forward_kernels"] == .string("int8-v1"))
        #expect(manifest["arithmetic"]?["eval"]?["forward_kernels"] == .string("int8-v1"))
        for implementation in ["avx2", "portable"] {
            let result = try await fixture.adapt(["replay", run, "--check", "--json"], environment: ["ADAPT_PROMPT_KERNELS": implementation])
            #expect(result.status == 0, "\(implementation): \(result.stderr)")
            let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay with \(implementation): \(result.stderr)")
            #expect(report["equal"] == .bool(true), "\(implementation): \(result.stdout)")
            #expect(report["arithmetic_difference"] == nil || report["arithmetic_difference"] == .null, "\(implementation): \(result.stdout)")
        }
    }
}
