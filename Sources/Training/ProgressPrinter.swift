import AdaptCore
import Foundation

/// Turns training events into text for a person or a program: on a terminal one live line rewritten in place
/// with `\r` (plus a line per checkpoint, evaluation and warning), otherwise one JSON object per line.
///
/// It writes through the closure it is given (the CLI passes stderr, so `--json` keeps stdout for its one
/// result document); the training loop itself never prints.
/// Not `Sendable`: one printer belongs to the one thread that runs the loop.
public final class ProgressPrinter {
    public enum Style: Sendable { case liveLine, jsonLines }

    public let style: Style
    private let write: (String) -> Void
    private var lineOpen = false

    public init(style: Style, write: @escaping (String) -> Void) {
        self.style = style
        self.write = write
    }

    public func callAsFunction(_ event: TrainingEvent) { handle(event) }

    public func handle(_ event: TrainingEvent) {
        switch style {
        case .jsonLines: write(Self.jsonLine(event) + "\n")
        case .liveLine:
            if case let .step(progress) = event {
                write("\r" + Self.liveLine(progress) + "\u{1B}[K")
                lineOpen = true
            } else {
                if lineOpen { write("\n") }
                lineOpen = false
                write(Self.message(event) + "\n")
            }
        }
    }

    /// Ends the live line so the next output starts on a fresh line.
    public func finish() {
        if lineOpen { write("\n") }
        lineOpen = false
    }

    /// `step 12/100  loss 2.3141  avg 2.4012  lr 1.0e-04  1534 tok/s  0:12 elapsed  1:28 left`
    public static func liveLine(_ p: StepProgress) -> String {
        let eta = p.etaSeconds.map { duration($0) + " left" } ?? "–"
        return "step \(p.step)/\(p.totalSteps)  loss \(fixed(p.loss, 4))  avg \(fixed(p.smoothedLoss, 4))  "
            + "lr \(String(format: "%.1e", p.learningRate))  \(Int(p.tokensPerSecond.rounded())) tok/s  "
            + "\(duration(p.elapsedSeconds)) elapsed  \(eta)"
    }

    public static func message(_ event: TrainingEvent) -> String {
        switch event {
        case let .resumed(step, checkpoint, warnings):
            return (warnings.map { "warning: \($0)" } + ["resumed at step \(step) from \(checkpoint)"]).joined(separator: "\n")
        case let .step(progress): return liveLine(progress)
        case let .evaluated(step, loss, best): return "held-out loss at step \(step): \(fixed(loss, 4))\(best ? " (best so far)" : "")"
        case let .checkpointWritten(step, name, bytes, seconds):
            return "checkpoint at step \(step): \(name) (\(String(format: "%.1f", Double(bytes) / 1e6)) MB in \(fixed(seconds, 2)) s)"
        case let .stoppedEarly(step, bestStep, bestLoss):
            return "stopped early at step \(step): held-out loss has not improved since step \(bestStep) (\(fixed(bestLoss, 4))); keeping those weights"
        }
    }

    /// One JSON object with an `event` field and snake_case figures.
    public static func jsonLine(_ event: TrainingEvent) -> String {
        var fields: [String: JSONValue]
        switch event {
        case let .resumed(step, checkpoint, warnings):
            fields = ["event": .string("resumed"), "step": .int(step), "checkpoint": .string(checkpoint),
                      "warnings": .array(warnings.map(JSONValue.string))]
        case let .step(p):
            fields = ["event": .string("step"), "step": .int(p.step), "total_steps": .int(p.totalSteps),
                      "loss": .double(p.loss), "smoothed_loss": .double(p.smoothedLoss),
                      "learning_rate": .double(p.learningRate), "gradient_norm": .double(p.gradientNorm),
                      "tokens_per_second": .double(p.tokensPerSecond), "elapsed_seconds": .double(p.elapsedSeconds),
                      "eta_seconds": p.etaSeconds.map(JSONValue.double) ?? .null]
        case let .evaluated(step, loss, best):
            fields = ["event": .string("evaluated"), "step": .int(step), "loss": .double(loss), "best": .bool(best)]
        case let .checkpointWritten(step, name, bytes, seconds):
            fields = ["event": .string("checkpoint"), "step": .int(step), "name": .string(name), "bytes": .int(bytes),
                      "seconds": .double(seconds)]
        case let .stoppedEarly(step, bestStep, bestLoss):
            fields = ["event": .string("stopped_early"), "step": .int(step), "best_step": .int(bestStep),
                      "best_loss": .double(bestLoss)]
        }
        return JSON.canonicalString(JSONValue.object(fields))
    }

    static func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

    /// `m:ss`, or `h:mm:ss` from an hour up.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }
}
