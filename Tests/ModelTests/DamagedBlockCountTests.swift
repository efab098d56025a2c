import Foundation
import Model
import Testing

/// Found by the gguf fuzz target (docs/fuzzing.md): a 58 KB file whose block_count is far beyond its tensor
/// table made validation list the tensor names of every block first and run out of memory.
@Test func aBlockCountFarBeyondTheTensorTableIsAMissingTensorNotAHugeAllocation() throws {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Regressions/gguf/block-count-far-beyond-the-tensor-table")
    let file = try GGUFFile(url: url, acceptingUnsupportedTensorTypes: true)
    #expect(try LlamaModel.Hyperparameters(file: file).blockCount > 1_000_000)
    #expect(throws: ModelError.self) { try LlamaModel.validateStructure(of: file) }
}
