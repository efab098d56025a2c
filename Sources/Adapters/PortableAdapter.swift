import AdaptCore
import Foundation

/// A LoRA adapter as every exchange format carries it: rank, alpha and the A/B pairs, in adapt's names and
/// layout (A of shape (rank, in), B of shape (out, rank), row-major, rows in the base GGUF's order), without
/// the training record an adapt adapter file adds.
///
/// Exports start from one and imports end in one, checked against the base model: that is where "made for
/// another base", "wrong rank" and "half a pair" are found, whatever the file's format.
public struct PortableAdapter: Sendable, Equatable {
    public var rank: Int
    public var alpha: Float
    /// Projection names in the order of `projectionOrder`.
    public var targets: [String]
    /// For each block, for each target: A then B.
    public var tensors: NamedTensors

    /// The order targets and tensors are kept in, so two files with the same weights give the same adapter.
    public static let projectionOrder = ["q", "k", "v", "qkv", "o", "gate", "up", "gate_up", "down"]

    public init(file: AdapterFile) {
        rank = file.metadata.rank
        alpha = file.metadata.alpha
        targets = file.metadata.targets
        tensors = file.tensors
    }

    /// One matrix read from another tool's file, already in adapt's layout.
    public struct Piece: Sendable {
        public var block: Int
        public var projection: String
        public var matrix: AdapterTensorNames.Matrix
        public var shape: [Int]
        public var values: [Float]
        /// The tensor's name in the file, for errors.
        public var source: String

        public init(block: Int, projection: String, matrix: AdapterTensorNames.Matrix, shape: [Int], values: [Float], source: String) {
            self.block = block
            self.projection = projection
            self.matrix = matrix
            self.shape = shape
            self.values = values
            self.source = source
        }
    }

    /// The adapter the pieces make for `base`: every pair whole, every shape the base's, one rank throughout
    /// (and `expectedRank` when the lineage has one), the same projections in every block. `file` labels errors.
    public init(pieces: [Piece], alpha: Float, base: BaseModelShape, expectedRank: Int?, file: String) throws(AdapterExchangeError) {
        try Self.checkAlpha(Double(alpha), field: "alpha", file: file)
        var byKey: [String: Piece] = [:]
        for piece in pieces {
            guard piece.block < base.blockCount, base.projections[piece.projection] != nil else {
                throw .unknownTensor(file: file, tensor: piece.source)
            }
            let key = AdapterTensorNames.adapt(block: piece.block, projection: piece.projection, matrix: piece.matrix)
            guard byKey[key] == nil else {
                throw .badConfiguration(file: file, field: "tensor \(piece.source)", reason: "appears twice")
            }
            byKey[key] = piece
        }
        guard let first = pieces.first(where: { $0.matrix == .a }) ?? pieces.first else {
            throw .badConfiguration(file: file, field: "tensors", reason: "are missing: the adapter has no LoRA pair")
        }
        let rank = first.matrix == .a ? (first.shape.first ?? 0) : (first.shape.last ?? 0)
        guard rank > 0 else { throw .shapeMismatch(file: file, tensor: first.source, expected: [], actual: first.shape) }
        if let expectedRank, expectedRank != rank { throw .rankMismatch(file: file, expected: expectedRank, actual: rank) }
        let present = Set(pieces.map(\.projection))
        let targets = Self.projectionOrder.filter(present.contains)
        var names: [String] = [], shapes: [[Int]] = [], values: [[Float]] = []
        for block in 0..<base.blockCount {
            for projection in targets {
                let (output, input) = base.projections[projection]!
                for (matrix, shape) in [(AdapterTensorNames.Matrix.a, [rank, input]), (.b, [output, rank])] {
                    let key = AdapterTensorNames.adapt(block: block, projection: projection, matrix: matrix)
                    guard let piece = byKey[key] else {
                        let other = byKey[AdapterTensorNames.adapt(block: block, projection: projection, matrix: matrix == .a ? .b : .a)]
                        if let other { throw .missingHalf(file: file, tensor: other.source) }
                        throw .unsupportedFeature(file: file, feature: "LoRA on only some blocks (block \(block) has no \(projection))")
                    }
                    guard piece.shape == shape else {
                        // A rank that differs between tensors shows as a shape that fits the base but not the rank.
                        let otherRank = matrix == .a ? piece.shape.first : piece.shape.last
                        if piece.shape.count == 2, let otherRank, otherRank != rank,
                           (matrix == .a ? piece.shape[1] == input : piece.shape[0] == output) {
                            throw .rankMismatch(file: file, expected: rank, actual: otherRank)
                        }
                        throw .shapeMismatch(file: file, tensor: piece.source, expected: shape, actual: piece.shape)
                    }
                    guard piece.values.allSatisfy(\.isFinite) else {
                        throw .badConfiguration(file: file, field: "tensor \(piece.source)", reason: "holds a non-finite value")
                    }
                    names.append(key)
                    shapes.append(shape)
                    values.append(piece.values)
                }
            }
        }
        self.rank = rank
        self.alpha = alpha
        self.targets = targets
        tensors = NamedTensors(names: names, shapes: shapes, values: values)
    }

    /// Refuses an alpha no adapter can be applied with (not finite, not above 0, past
    /// `AdapterSettings.maximumAlpha`), naming the field as the file's format calls it.
    public static func checkAlpha(_ alpha: Double, field: String, file: String) throws(AdapterExchangeError) {
        guard AdapterSettings.isPlausible(alpha: alpha) else {
            throw .badConfiguration(file: file, field: field,
                                    reason: "is \(alpha), not a number above 0 and at most \(AdapterSettings.maximumAlpha)")
        }
    }

    /// Refuses a dropout that is present but not a probability in [0, 1); only training uses it, but a file that
    /// says otherwise is damaged.
    public static func checkDropout(_ value: JSONValue?, field: String, file: String) throws(AdapterExchangeError) {
        guard let value, value != .null else { return }
        guard let dropout = value.doubleValue, dropout.isFinite, dropout >= 0, dropout < 1 else {
            throw .badConfiguration(file: file, field: field, reason: "is not a number in [0, 1)")
        }
    }

    /// The pairs with their block and projection, in order.
    public var pairs: [(block: Int, projection: String, a: Int, b: Int)] {
        var position: [String: Int] = [:]
        for (i, name) in tensors.names.enumerated() { position[name] = i }
        var out: [(Int, String, Int, Int)] = []
        for (i, name) in tensors.names.enumerated() {
            guard let parsed = AdapterTensorNames.parseAdapt(name), parsed.matrix == .a,
                  let b = position[AdapterTensorNames.adapt(block: parsed.block, projection: parsed.projection, matrix: .b)] else { continue }
            out.append((parsed.block, parsed.projection, i, b))
        }
        return out
    }

    /// SHA-256 of what the adapter computes: rank, alpha and every tensor's name, shape and f32 values, in name
    /// order. The same for an adapt file and its f32 export read back, whatever the file around them.
    public var weightsDigest: Digest {
        let order = tensors.names.indices.sorted { tensors.names[$0] < tensors.names[$1] }
        let header: JSONValue = .object([
            "rank": .int(rank), "alpha": .double(Double(alpha)),
            "tensors": .array(order.map { .object(["name": .string(tensors.names[$0]), "shape": .array(tensors.shapes[$0].map { .int($0) })]) }),
        ])
        var hasher = SHA256()
        hasher.update(JSON.canonical(header))
        for i in order {
            var bytes = Data(capacity: tensors.values[i].count * 4)
            for v in tensors.values[i] { withUnsafeBytes(of: v.bitPattern.littleEndian) { bytes.append(contentsOf: $0) } }
            hasher.update(bytes)
        }
        return hasher.finalize()
    }
}
