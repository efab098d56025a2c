import Foundation

/// How the learning rate moves over the optimizer steps of a run.
///
/// `step` is the zero-based index of the optimizer step about to be taken, so step 0 of a warm-up of 10
/// uses 1/10 of the peak rate (never 0, which would waste the first step) and step 9 the full peak.
public enum LearningRateSchedule: Sendable, Equatable, Codable {
    /// The peak rate throughout.
    case constant
    /// Linear from peak/warmup to peak over `warmup` steps, then constant.
    case linearWarmup(warmup: Int)
    /// Linear warm-up, then half a cosine from the peak down to `floor` × peak at the last step
    /// (SGDR, Loshchilov & Hutter 2017, without restarts).
    case cosine(warmup: Int, floor: Double)
    /// Linear warm-up, then a straight line from the peak down to `floor` × peak at the last step (the shape of
    /// transformers' linear schedule, which ends at 0, with a floor like the cosine's).
    case linearDecay(warmup: Int, floor: Double)

    /// The learning rate of optimizer step `step` (zero-based) in a run of `totalSteps` steps.
    public func rate(peak: Double, step: Int, totalSteps: Int) -> Double {
        switch self {
        case .constant:
            return peak
        case let .linearWarmup(warmup):
            return step < warmup ? peak * Double(step + 1) / Double(warmup) : peak
        case let .cosine(warmup, floor), let .linearDecay(warmup, floor):
            if step < warmup { return peak * Double(step + 1) / Double(warmup) }
            let span = totalSteps - warmup - 1
            guard span > 0 else { return peak }
            let progress = min(Double(step - warmup) / Double(span), 1)
            let minimum = peak * floor
            if case .cosine = self { return minimum + (peak - minimum) * 0.5 * (1 + cos(Double.pi * progress)) }
            return peak - (peak - minimum) * progress
        }
    }

    /// Checks the parameters; `field` names the setting in errors.
    public func validate() throws {
        switch self {
        case .constant: return
        case let .linearWarmup(warmup):
            guard warmup >= 1 else { throw TrainingError.invalidConfiguration(field: "warmup", reason: "must be at least 1, got \(warmup)") }
        case let .cosine(warmup, floor), let .linearDecay(warmup, floor):
            guard warmup >= 0 else { throw TrainingError.invalidConfiguration(field: "warmup", reason: "must not be negative, got \(warmup)") }
            guard floor >= 0, floor <= 1 else {
                throw TrainingError.invalidConfiguration(field: "lr floor", reason: "must be a fraction of the peak between 0 and 1, got \(floor)")
            }
        }
    }

    /// A short text for tables and checkpoint mismatch messages.
    public var summary: String {
        switch self {
        case .constant: return "constant"
        case let .linearWarmup(warmup): return "linear warm-up over \(warmup)"
        case let .cosine(warmup, floor): return "cosine (warm-up \(warmup), floor \(floor))"
        case let .linearDecay(warmup, floor): return "linear decay (warm-up \(warmup), floor \(floor))"
        }
    }
}
