import AdaptCore

/// What an adapter export or import needs to know of the base model: its digest, its architecture, its head
/// counts (for the q/k row permutation) and the (out, in) shape of every weight an adapter can change.
///
/// The Model module reads it from the GGUF; this module only uses it, so it stays below the model.
public struct BaseModelShape: Sendable, Equatable {
    public var digest: Digest
    /// The file name, for configuration files that record which base an adapter belongs to.
    public var fileName: String
    public var architecture: String
    public var blockCount: Int
    public var headCount: Int
    public var kvHeadCount: Int
    /// Projection name → (out, in), the same in every block.
    public var projections: [String: (output: Int, input: Int)]

    public init(digest: Digest, fileName: String, architecture: String, blockCount: Int, headCount: Int, kvHeadCount: Int,
                projections: [String: (output: Int, input: Int)]) {
        self.digest = digest
        self.fileName = fileName
        self.architecture = architecture
        self.blockCount = blockCount
        self.headCount = headCount
        self.kvHeadCount = kvHeadCount
        self.projections = projections
    }

    public static func == (a: BaseModelShape, b: BaseModelShape) -> Bool {
        a.digest == b.digest && a.fileName == b.fileName && a.architecture == b.architecture && a.blockCount == b.blockCount
            && a.headCount == b.headCount && a.kvHeadCount == b.kvHeadCount
            && a.projections.mapValues { [$0.output, $0.input] } == b.projections.mapValues { [$0.output, $0.input] }
    }

    public var names: AdapterTensorNames { get throws(AdapterExchangeError) { try .of(architecture: architecture) } }
}
