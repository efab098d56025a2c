import AdaptCore

/// A linear projection of a llama block that an adapter can target.
///
/// `qkv` and `gateUp` are the fused tensors of phi3 (`attn_qkv`, and `ffn_up` holding gate then up): one
/// LoRA pair on the whole tensor, A (r, C) shared by its members and B's rows those of the members in order,
/// as PEFT, mlx-lm and llama.cpp put it on Phi-3's `qkv_proj` and `gate_up_proj`. A fused pair equals
/// separate pairs that share A, so the passes apply it on top of the members' own products.
public enum Projection: String, Sendable, Codable, CaseIterable {
    case q, k, v, o, gate, up, down
    case qkv, gateUp = "gate_up"

    /// The default targets: the four attention projections (as PEFT's llama default and our issue specify).
    public static let attention: [Projection] = [.q, .k, .v, .o]

    /// The projections whose rows a fused target holds, in row order; empty for the others.
    public var members: [Projection] {
        switch self {
        case .qkv: return [.q, .k, .v]
        case .gateUp: return [.gate, .up]
        default: return []
        }
    }

    /// The fused target holding this projection's rows, if any.
    public var fused: Projection? { Self.allCases.first { $0.members.contains(self) } }
}

/// How an adapter is shaped and applied.
public struct LoRAConfig: Sendable, Codable, Equatable {
    public var rank: Int
    public var alpha: Float
    /// Probability of zeroing an input element of the adapter path during training (PEFT's lora_dropout).
    public var dropout: Float
    public var targets: [Projection]

    public init(rank: Int = 8, alpha: Float = 16, dropout: Float = 0.05, targets: [Projection] = Projection.attention) {
        self.rank = rank
        self.alpha = alpha
        self.dropout = dropout
        self.targets = targets
    }

    /// alpha / rank: the factor on the adapter's output.
    public var scale: Float { alpha / Float(rank) }
}

/// The tensors of one LoRA adapter, in a fixed order: for each block i, for each target p in `config.targets`
/// order, "blk.<i>.<p>.lora_a" of shape (rank, in) then "blk.<i>.<p>.lora_b" of shape (out, rank), row-major.
/// A projection W (out, in) becomes y = W·x + (alpha/rank) · B·(A·dropout(x)).
public struct LoRAParameters: Sendable, Equatable {
    public var config: LoRAConfig
    public var names: [String]
    public var shapes: [[Int]]
    public var values: [[Float]]

    public init(config: LoRAConfig, names: [String], shapes: [[Int]], values: [[Float]]) {
        self.config = config
        self.names = names
        self.shapes = shapes
        self.values = values
    }

    public static func name(block: Int, _ projection: Projection, _ matrix: String) -> String {
        "blk.\(block).\(projection.rawValue).lora_\(matrix)"
    }

    /// A fresh adapter: A uniform in ±1/√in (PEFT's kaiming_uniform_ with a = √5 gives bound
    /// gain·√(3/fan_in) = √(2/6)·√(3/in) = 1/√in), B zero, so the adapted model equals the base model.
    /// A's values come from `CounterRNG(seed)` with purpose `.loraInit`, step = the tensor's position.
    public static func initialized(for hyperparameters: LlamaModel.Hyperparameters, config: LoRAConfig, seed: UInt64) -> LoRAParameters {
        precondition(config.rank > 0, "LoRA rank must be positive")
        let rng = CounterRNG(seed: seed)
        var names: [String] = [], shapes: [[Int]] = [], values: [[Float]] = []
        for block in 0..<hyperparameters.blockCount {
            for projection in config.targets {
                let (output, input) = hyperparameters.shape(of: projection)
                let bound = 1 / Float(input).squareRoot()
                let step = UInt64(names.count)
                names.append(name(block: block, projection, "a"))
                shapes.append([config.rank, input])
                values.append((0..<(config.rank * input)).map { i in
                    Float(rng.uniform(.loraInit, step: step, index: UInt32(i)) * 2 - 1) * bound
                })
                names.append(name(block: block, projection, "b"))
                shapes.append([output, config.rank])
                values.append([Float](repeating: 0, count: output * config.rank))
            }
        }
        return LoRAParameters(config: config, names: names, shapes: shapes, values: values)
    }

    public static func initialized(for model: LlamaModel, config: LoRAConfig, seed: UInt64) -> LoRAParameters {
        initialized(for: model.hyperparameters, config: config, seed: seed)
    }

    /// Total number of trainable values.
    public var parameterCount: Int { values.reduce(0) { $0 + $1.count } }

    /// The positions of (A, B) for each block and projection, or nil where the adapter has none.
    func slots(blockCount: Int) -> [[Projection: (a: Int, b: Int)]] {
        var table = [[Projection: (a: Int, b: Int)]](repeating: [:], count: blockCount)
        var position: [String: Int] = [:]
        for (i, n) in names.enumerated() { position[n] = i }
        for block in 0..<blockCount {
            for projection in Projection.allCases {
                if let a = position[Self.name(block: block, projection, "a")], let b = position[Self.name(block: block, projection, "b")] {
                    table[block][projection] = (a, b)
                }
            }
        }
        return table
    }

    /// Checks the tensors fit the model; a mismatch is a programmer error (the adapter file reader validates
    /// user files before they get here).
    func validate(for h: LlamaModel.Hyperparameters) {
        precondition(names.count == shapes.count && names.count == values.count, "LoRA names, shapes and values disagree")
        for (i, shape) in shapes.enumerated() {
            precondition(shape.reduce(1, *) == values[i].count, "LoRA tensor \(names[i]) has \(values[i].count) values for shape \(shape)")
        }
        for (block, row) in slots(blockCount: h.blockCount).enumerated() {
            for (projection, slot) in row {
                let (output, input) = h.shape(of: projection)
                precondition(shapes[slot.a] == [config.rank, input] && shapes[slot.b] == [output, config.rank],
                             "LoRA tensors of block \(block) \(projection) do not fit the model")
            }
        }
    }
}

/// One sequence of a training batch.
public struct TrainingSequence: Sendable {
    public var tokens: [Int]
    /// weights[i] is the loss weight of predicting tokens[i + 1] (0 on the prompt); count == tokens.count − 1.
    public var weights: [Float]

    public init(tokens: [Int], weights: [Float]) {
        precondition(weights.count == max(0, tokens.count - 1), "a training sequence needs one weight per predicted token")
        self.tokens = tokens
        self.weights = weights
    }
}
