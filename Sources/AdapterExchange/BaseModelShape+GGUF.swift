import AdaptCore
import Adapters
import Foundation
import Model

extension BaseModelShape {
    /// The shape of the base model in the GGUF at `url`, with the file's SHA-256 (the digest adapters record).
    public init(model url: URL) throws {
        let file = try GGUFFile(url: url)
        let h = try LlamaModel.Hyperparameters(file: file)
        var projections: [String: (output: Int, input: Int)] = [:]
        for projection in Projection.allCases { projections[projection.rawValue] = h.shape(of: projection) }
        self.init(digest: try Digest.sha256(fileAt: url), fileName: url.lastPathComponent,
                  architecture: file.string("general.architecture") ?? "", blockCount: h.blockCount,
                  headCount: h.headCount, kvHeadCount: h.kvHeadCount, projections: projections)
    }
}
