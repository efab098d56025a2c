import AdaptCore
import Foundation
import ReplayBuffer
import Testing

/// The generated corpora (scripts/fixtures/generate-scrubber-corpus.py): PII in several formats and locales,
/// and PII-free look-alikes. The measured figures are in docs/replay-buffer.md.
enum Corpus {
    struct PIILine: Decodable { let locale: String; let text: String; let pii: [Item] }
    struct Item: Decodable { let kind: String; let value: String }
    struct CleanLine: Decodable { let locale: String; let kind: String; let text: String }

    static func lines<T: Decodable>(_ name: String, as type: T.Type) throws -> [T] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
        let data = try Data(contentsOf: url)
        return try data.split(separator: 0x0A).map { try JSONDecoder().decode(T.self, from: Data($0)) }
    }

    /// Digits and letters only, lower-cased: how a leak is looked for, whatever separators survive.
    static func squeeze(_ text: String) -> String {
        String(text.lowercased().unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.map(Character.init))
    }

    /// True when anything identifying of `item` is still in `output`: the value itself, an e-mail's local part
    /// with its `@`, or the last six digits or characters of a number (separators ignored).
    static func survives(_ item: Item, in output: String) -> Bool {
        if output.lowercased().contains(item.value.lowercased()) { return true }
        if item.kind == "email" {
            let local = item.value.lowercased().split(separator: "@").first.map(String.init) ?? item.value
            return output.lowercased().contains(local + "@")
        }
        let tail = String(squeeze(item.value).suffix(6))
        return squeeze(output).contains(tail)
    }
}

/// What one corpus pair measured.
struct CorpusFigures {
    var found: [String: Int] = [:]
    var total: [String: Int] = [:]
    var misses: [String] = []
    var changed: [String] = []
    var cleanLines = 0

    var recall: Double { Double(found.values.reduce(0, +)) / Double(max(1, total.values.reduce(0, +))) }
    var falsePositiveRate: Double { Double(changed.count) / Double(max(1, cleanLines)) }

    static func measure(pii: String, clean: String) throws -> CorpusFigures {
        var figures = CorpusFigures()
        for line in try Corpus.lines(pii, as: Corpus.PIILine.self) {
            let (output, _) = ScrubPipeline.standard.scrub(line.text)
            for item in line.pii {
                figures.total[item.kind, default: 0] += 1
                if Corpus.survives(item, in: output) {
                    figures.misses.append("\(item.kind) \(line.locale): \(item.value)  →  \(output)")
                } else {
                    figures.found[item.kind, default: 0] += 1
                }
            }
        }
        let cleanLines = try Corpus.lines(clean, as: Corpus.CleanLine.self)
        figures.cleanLines = cleanLines.count
        for line in cleanLines {
            let (output, counts) = ScrubPipeline.standard.scrub(line.text)
            if output != line.text || counts.total != 0 { figures.changed.append("\(line.kind): \(line.text)  →  \(output)") }
        }
        let kinds = figures.total.keys.sorted().map { "\($0) \(figures.found[$0] ?? 0)/\(figures.total[$0]!)" }
        print("\(pii): recall \(String(format: "%.4f", figures.recall)) (\(kinds.joined(separator: ", "))); "
              + "\(clean): \(figures.changed.count)/\(cleanLines.count) lines changed")
        for miss in figures.misses { print("  missed \(miss)") }
        for change in figures.changed { print("  changed \(change)") }
        return figures
    }
}

/// The tuning corpus: the scanners were adjusted until nothing survived and nothing clean changed.
@Test func scrubberRemovesEveryPieceOfPersonalDataInTheTuningCorpus() throws {
    let figures = try CorpusFigures.measure(pii: "pii.jsonl", clean: "clean.jsonl")
    #expect(figures.total.values.reduce(0, +) >= 400)
    #expect(figures.misses.isEmpty, "\(figures.misses.count) items survived")
    #expect(figures.changed.isEmpty, "\(figures.changed.count) clean lines changed")
}

/// The check corpus (another seed, never tuned against): the honest estimate. The bars are the measured
/// figures rounded down (docs/replay-buffer.md): a change that loses recall or adds false positives
/// on text the scanners were not fitted to fails here.
@Test func scrubberHoldsItsMeasuredRecallOnTheCheckCorpus() throws {
    let figures = try CorpusFigures.measure(pii: "pii-check.jsonl", clean: "clean-check.jsonl")
    #expect(figures.recall >= 0.99)
    #expect(figures.falsePositiveRate <= 0.005)
}

/// The keyword corpus (scripts/fixtures/generate-scrubber-keyword-corpus.py, issue 41): order, invoice, account
/// and reference words beside phone numbers and beside the numbers they label. Committed before the scrubber was
/// changed for it; the bars are the issue's targets (docs/replay-buffer.md has the measured figures).
@Test func orderAndInvoiceWordsNeitherSaveAPhoneNumberNorLoseTheNumbersTheyLabel() throws {
    let figures = try CorpusFigures.measure(pii: "pii-keywords.jsonl", clean: "clean-keywords.jsonl")
    #expect(figures.total.values.reduce(0, +) >= 2000)
    #expect(figures.recall >= 0.995, "\(figures.misses.count) items survived")
    #expect(figures.falsePositiveRate <= 0.005, "\(figures.changed.count) clean lines changed")
}
