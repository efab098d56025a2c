import CommandLineKit
import Foundation
import Services

extension VoiceReport {
    /// The report for people; the phrases and replies only with `includeText`.
    func table(includeText: Bool) -> String {
        func percent(_ share: Double?) -> String { share.map { String(format: "%.0f%%", $0 * 100) } ?? "-" }
        var table = Table("MODEL", "REPLIES", "WITH PHRASE", "DISTINCT-2", "LOOPS", "AT MAX TOKENS")
        for (name, m) in [("base", baseMetrics), ("\(lineage)/\(version)", adapterMetrics)] {
            table.append([name, "\(m.replies)", "\(m.withPhrase) (\(percent(m.phraseShare)))",
                          m.distinct2.map { String(format: "%.3f", $0) } ?? "-", "\(m.loops)", "\(m.endedAtLimit)"])
        }
        var lines = [
            "voice check of \(lineage): \(examples.count) held-out prompts, greedy"
                + (repeatPenalty == 1 ? "" : " with repetition penalty \(repeatPenalty)")
                + ", at most \(maxTokens) new tokens, "
                + String(format: "%.0f s", seconds),
            "\(phrases.phrases.count) recurring phrase\(phrases.phrases.count == 1 ? "" : "s"), each in at least "
                + "\(phrases.minCompletions) of \(trainingReplies) training replies",
            table.render(),
        ]
        if includeText {
            lines.append("phrases:")
            lines += phrases.phrases.map { "  \(TerminalText.escaped($0.text)) (\($0.completions) replies)" }
            for (i, id) in examples.enumerated() {
                lines.append("example \(id.prefix(12)):")
                lines.append("  base:    " + TerminalText.escaped(base[i].text))
                lines.append("  adapter: " + TerminalText.escaped(adapter[i].text))
            }
        }
        return lines.joined(separator: "\n")
    }
}
