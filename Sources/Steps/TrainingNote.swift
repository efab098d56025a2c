import Foundation

/// The train step's progress notes in the job's events: written here, read back by `adapt report` (the loss curve
/// of an unfinished step, its checkpoints and resumes) and by `adapt work` and `adapt runs --watch` (live progress).
///
/// `step 20/48 loss 2.3100 smoothed 2.4012 tok/s 512.3 eta 65s; checkpoint step-20 at step 20` and
/// `resumed from checkpoint step-20 at step 20`. Only numbers and checkpoint names: never user text.
public enum TrainingNote: Sendable, Equatable {
    case step(StepNote)
    case resumed(checkpoint: String, step: Int)

    public struct StepNote: Sendable, Equatable {
        public var step: Int
        public var total: Int
        public var loss: Double?
        public var smoothed: Double?
        public var tokensPerSecond: Double?
        public var etaSeconds: Double?
        /// The checkpoint written at the end of this stretch of steps, when one was.
        public var checkpoint: (name: String, step: Int)?

        public init(step: Int, total: Int, loss: Double?, smoothed: Double? = nil, tokensPerSecond: Double? = nil,
                    etaSeconds: Double? = nil, checkpoint: (name: String, step: Int)? = nil) {
            self.step = step
            self.total = total
            self.loss = loss
            self.smoothed = smoothed
            self.tokensPerSecond = tokensPerSecond
            self.etaSeconds = etaSeconds
            self.checkpoint = checkpoint
        }

        public static func == (a: StepNote, b: StepNote) -> Bool {
            a.step == b.step && a.total == b.total && a.loss == b.loss && a.smoothed == b.smoothed
                && a.tokensPerSecond == b.tokensPerSecond && a.etaSeconds == b.etaSeconds
                && a.checkpoint?.name == b.checkpoint?.name && a.checkpoint?.step == b.checkpoint?.step
        }

        public var message: String {
            var text = "step \(step)/\(total) loss \(loss.map { String(format: "%.4f", $0) } ?? "–")"
            if let smoothed { text += String(format: " smoothed %.4f", smoothed) }
            if let tokensPerSecond { text += String(format: " tok/s %.1f", tokensPerSecond) }
            if let etaSeconds, etaSeconds.isFinite { text += " eta \(Int(min(max(etaSeconds, 0), 1e9).rounded()))s" }
            if let checkpoint { text += "; checkpoint \(checkpoint.name) at step \(checkpoint.step)" }
            return text
        }
    }

    public var message: String {
        switch self {
        case let .step(note): return note.message
        case let .resumed(checkpoint, step): return "resumed from checkpoint \(checkpoint) at step \(step)"
        }
    }

    /// The note `message` holds, or nil for any other progress message (a deferral, a warning).
    public init?(message: String) {
        let parts = message.components(separatedBy: "; ")
        let words = parts[0].split(separator: " ")
        if words.count >= 7, words[0] == "resumed", words[1] == "from", words[2] == "checkpoint", words[4] == "at",
           words[5] == "step", let step = Int(words[6].prefix { $0.isNumber }) {
            self = .resumed(checkpoint: String(words[3]), step: step)
            return
        }
        guard words.count >= 2, words[0] == "step" else { return nil }
        let fraction = words[1].split(separator: "/")
        guard fraction.count == 2, let step = Int(fraction[0]), let total = Int(fraction[1]) else { return nil }
        var note = StepNote(step: step, total: total, loss: nil)
        var index = 2
        while index + 1 < words.count {
            let value = words[index + 1]
            switch words[index] {
            case "loss": note.loss = Double(value)
            case "smoothed": note.smoothed = Double(value)
            case "tok/s": note.tokensPerSecond = Double(value)
            case "eta": note.etaSeconds = Double(value.dropLast(value.hasSuffix("s") ? 1 : 0))
            default: break
            }
            index += 2
        }
        for part in parts.dropFirst() {
            let w = part.split(separator: " ")
            if w.count == 5, w[0] == "checkpoint", w[2] == "at", w[3] == "step", let s = Int(w[4]) { note.checkpoint = (String(w[1]), s) }
        }
        self = .step(note)
    }
}
