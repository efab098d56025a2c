import AdaptCore
import Foundation
import Model
import Testing
import TestSupport

/// `adapt train --resume` continues with the forward products its checkpoint recorded: a run that asked for int8
/// where no int8 kernels ran (recorded `forward_kernels: sgemm`, as on a CPU without VNNI before int8-v1, or under
/// `ADAPT_PROMPT_KERNELS=sgemm`) resumes on sgemm, bit for bit, instead of being refused for the int8 kernels
/// this machine now has.
@Suite(.serialized) struct ResumeRecordedForwardProductsTests {
    @Test func aCheckpointThatRanSgemmWhenAskedForInt8ResumesOnSgemm() throws {
        let (directory, model, data) = try TrainCommandTests.fixture(weightType: .q4_1)
        let out = directory.file("w.lora").path
        var arguments = TrainCommandTests.arguments(model: model, data: data, out: out)
        arguments[arguments.firstIndex(of: "30")!] = "4"
        let first = try Executables.run("adapt", arguments + ["--forward-products", "int8"], environment: ["ADAPT_PROMPT_KERNELS": "sgemm"])
        #expect(first.status == 0, "\(first.stderr)")
        let firstDocument = try JSON.decode(JSONValue.self, from: first.stdout, context: "adapt train --json")
        #expect(firstDocument["forward_kernels"] == .string("sgemm"))
        let resumed = try Executables.run("adapt", arguments + ["--resume"], environment: ["ADAPT_PROMPT_KERNELS": ""])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let resumedDocument = try JSON.decode(JSONValue.self, from: resumed.stdout, context: "adapt train --json")
        #expect(resumedDocument["forward_kernels"] == .string("sgemm"))
        #expect(resumedDocument["digest"] == firstDocument["digest"])
    }
}
