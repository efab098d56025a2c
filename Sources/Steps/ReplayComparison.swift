import AdaptCore
import Pipelines

/// How replay compares a step's replayed result with its record (issue 24).
///
/// - `bits`: every compared value, and the step's digests, equal. A run whose recorded arithmetic differs from
///   this machine's cannot be checked this way and is refused before anything runs.
/// - `tolerance(x)`: bits up to the first step whose recorded arithmetic differs from this machine's (another
///   OpenBLAS core type or version, thread count or architecture); from that step on, every floating-point
///   result (train's losses and validation losses, eval's per-example NLLs, their means and the gate's
///   statistics) agrees when `|replayed − recorded| ≤ x · max(1, |recorded|)` (relative at magnitudes of 1 and
///   above, absolute below); everything else (counts, early stopping, the best step, the gate's outcome,
///   promote's decision, every input) must be equal. `digests.*` are not compared there: they hash the numbers.
///   The adapter a train step wrote is matched by correspondence: its replayed digest stands for the recorded
///   one, and every later mention of the recorded digest (eval's candidate, promote's blob) must be it.
public enum ReplayComparison: Sendable, Equatable {
    case bits
    case tolerance(Double)

    /// `x` of `tolerance(x)`.
    public var tolerance: Double? {
        if case let .tolerance(x) = self { return x }
        return nil
    }

    /// The measure compared with the tolerance: `|actual − expected| / max(1, |expected|)`; infinite when only one
    /// side is NaN or infinite, 0 when both are the same non-finite value.
    public static func distance(expected: Double, actual: Double) -> Double {
        if expected.isNaN || actual.isNaN { return expected.isNaN && actual.isNaN ? 0 : .infinity }
        if expected.isInfinite || actual.isInfinite { return expected == actual ? 0 : .infinity }
        return abs(actual - expected) / max(1, abs(expected))
    }
}

/// The largest difference between a recorded and a replayed floating-point value a replay saw.
public struct NumericDifference: Sendable, Equatable, Encodable {
    public let step: String
    public let field: String
    public let expected: Double
    public let actual: Double
    /// `ReplayComparison.distance` of the two.
    public let difference: Double
}

/// The comparison of the steps from the first one whose arithmetic differs, with its memory: the adapters
/// trained here in place of the recorded ones, and the largest numeric difference so far.
struct TolerantComparison {
    /// The result fields of each step kind that hash numbers the arithmetic computed: the train step's adapter.
    static let computedDigests: [String: Set<String>] = [StepKind.train.rawValue: ["adapter_digest", "adapter_blob"]]

    /// Sentences that quote the compared numbers (the gate's reason may cite its p-value): the numbers and the
    /// outcome beside them are compared instead.
    static let prose: Set<String> = ["gate.reason"]

    let tolerance: Double
    /// Recorded digest → the digest replayed in its place.
    private(set) var replacements: [String: String] = [:]
    private(set) var largest: NumericDifference?

    init(tolerance: Double) { self.tolerance = tolerance }

    /// The first compared field out of tolerance, or whose presence differs.
    mutating func firstDifference(step: String, kind: String, expected: JSONValue, actual: JSONValue) -> RunReplay.Difference? {
        let want = StepRecord.comparedFields(of: expected)
        let got = StepRecord.comparedFields(of: actual)
        let gotByField = Dictionary(got.map { ($0.field, $0.value) }, uniquingKeysWith: { first, _ in first })
        let computed = Self.computedDigests[kind] ?? []
        for (field, value) in want where !Self.prose.contains(field) {
            let other = gotByField[field] ?? .null
            let difference = RunReplay.Difference(step: step, field: field, expected: value, actual: other)
            if computed.contains(field), case let .string(recorded) = value, case let .string(replayed) = other {
                if let earlier = replacements[recorded], earlier != replayed { return difference }
                replacements[recorded] = replayed
                continue
            }
            if let (a, b) = Self.floatingPair(value, other) {
                let distance = ReplayComparison.distance(expected: a, actual: b)
                if distance > (largest?.difference ?? 0) {
                    largest = NumericDifference(step: step, field: field, expected: a, actual: b, difference: distance)
                }
                if !(distance <= tolerance) { return difference }
                continue
            }
            if case let .string(recorded) = value, let replaced = replacements[recorded] {
                if other != .string(replaced) { return difference }
                continue
            }
            if gotByField[field] == nil || JSON.canonicalString(other) != JSON.canonicalString(value) { return difference }
        }
        let wantFields = Set(want.map(\.field))
        if let extra = got.first(where: { !wantFields.contains($0.field) }) {
            return RunReplay.Difference(step: step, field: extra.field, expected: .null, actual: extra.value)
        }
        return nil
    }

    /// Both values as numbers when at least one is floating-point (a recorded 0.0 reads back as the integer 0);
    /// two integers are counts, compared exactly.
    static func floatingPair(_ a: JSONValue, _ b: JSONValue) -> (Double, Double)? {
        func number(_ v: JSONValue) -> Double? {
            switch v {
            case let .double(d): return d
            case let .int(i): return Double(i)
            default: return nil
            }
        }
        guard let x = number(a), let y = number(b) else { return nil }
        if case .int = a, case .int = b { return nil }
        return (x, y)
    }
}
