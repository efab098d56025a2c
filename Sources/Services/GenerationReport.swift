import Foundation
import Inference
import Model

/// How `adapt generate` shows a `Generation.Outcome`: DESIGN.md's `--json` document and the statistics line.
public enum GenerationReport {
    /// DESIGN.md's `generate` document, plus how the base model's matrices were kept (`base_weights`).
    public struct ResultJSON: Encodable {
        let text: String
        let token_ids: [Int32]
        let prompt_tokens: Int
        let cached_tokens: Int
        let generated_tokens: Int
        let prompt_ms: Double
        let generation_ms: Double
        let tokens_per_second: Double
        let base_weights: String

        public init(_ r: GenerationResult, baseWeights: BaseWeightStorage) {
            text = r.text
            token_ids = r.tokenIDs
            prompt_tokens = r.promptTokens
            cached_tokens = r.cachedTokens
            generated_tokens = r.generatedTokens
            prompt_ms = (r.promptMilliseconds * 1000).rounded() / 1000
            generation_ms = (r.generationMilliseconds * 1000).rounded() / 1000
            tokens_per_second = (r.tokensPerSecond * 1000).rounded() / 1000
            base_weights = baseWeights.rawValue
        }
    }

    /// `--compare --json`: `{base: …, adapter: …}`.
    public struct ComparisonJSON: Encodable {
        let base: ResultJSON
        let adapter: ResultJSON

        public init(base: GenerationResult, adapter: GenerationResult, baseWeights: BaseWeightStorage) {
            self.base = ResultJSON(base, baseWeights: baseWeights)
            self.adapter = ResultJSON(adapter, baseWeights: baseWeights)
        }
    }

    /// One line for stderr: prompt and generation timing and why the answer ended.
    public static func statistics(_ r: GenerationResult) -> String {
        func f(_ x: Double) -> String { String(format: "%.1f", x) }
        return "prompt \(r.promptTokens) tokens (\(r.cachedTokens) cached) in \(f(r.promptMilliseconds)) ms; "
            + "\(r.generatedTokens) tokens in \(f(r.generationMilliseconds)) ms, \(f(r.tokensPerSecond)) tokens/s; "
            + "ended by \(r.finishReason.rawValue)"
    }
}
