import Foundation

/// One reader under fuzzing: what one input does to it, and the seed inputs its corpus starts from.
///
/// `run` must return for every input; a finding is a trap (a Swift runtime check, or `FuzzFinding.fail` when
/// a property the reader promises does not hold), which libFuzzer reports and the regression suite turns into
/// a failed run. Errors the reader throws are the expected outcome for bad input and are ignored.
public protocol FuzzTarget: Sendable {
    /// The name `scripts/fuzz` and the corpus directory use.
    static var name: String { get }
    static func run(_ data: Data)
    /// Seed inputs built from the test fixtures and the project's own writers, small enough to mutate fast.
    static func seeds() throws -> [Data]
}

/// Every target, in the order `scripts/fuzz` runs them.
public enum FuzzTargets {
    public static let all: [any FuzzTarget.Type] = [
        GGUFFuzz.self, JSONLFuzz.self, PipelineFuzz.self, RunDescriptionFuzz.self, AdapterFuzz.self,
        CheckpointFuzz.self, TokenizerFuzz.self, ChatTemplateFuzz.self, SafetensorsFuzz.self, GGUFLoRAFuzz.self,
        PEFTFuzz.self, MLXFuzz.self, RunBundleFuzz.self,
    ]

    public static let names: [String] = all.map { $0.name }

    public static func named(_ name: String) -> (any FuzzTarget.Type)? { all.first { $0.name == name } }
}

/// A property that failed: stops the process so libFuzzer keeps the input.
enum FuzzFinding {
    static func fail(_ target: String, _ property: String) -> Never {
        fatalError("fuzz \(target): \(property)")
    }
}
