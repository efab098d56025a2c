import Foundation
import Model
import TestSupport
import Testing

/// A model whose weights hold NaN makes the first step's loss NaN before any update: the message blames the
/// model, not the learning rate a user would otherwise lower in vain.
@Test func aModelWithNaNWeightsIsBlamedForANonFiniteFirstLossNotTheLearningRate() throws {
    let (directory, model, data) = try TrainCommandTests.fixture()
    let file = try GGUFFile(url: URL(fileURLWithPath: model))
    let norm = try #require(file.tensors.first { $0.name == "output_norm.weight" && $0.type == .f32 })
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: model))
    try handle.seek(toOffset: UInt64(norm.offset))
    try handle.write(contentsOf: Data(repeating: 0xFF, count: norm.byteCount))  // all-ones bits: NaN
    try handle.close()
    let run = try Executables.run("adapt", TrainCommandTests.arguments(model: model, data: data, out: directory.file("nan.lora").path))
    #expect(run.status == 1, "\(run.stderr)")
    #expect(run.stderr.contains("before any update"), "\(run.stderr)")
    #expect(run.stderr.contains("the learning rate is not the cause"), "\(run.stderr)")
    #expect(!run.stderr.contains("lower --lr"), "\(run.stderr)")
}
