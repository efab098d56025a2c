/// How the next token is chosen from the model's logits.
///
/// The defaults are llama.cpp's (`common_params_sampling`): temperature 0.8, top-k 40, top-p 0.95,
/// min-p 0.05, no repetition, presence or frequency penalty, a 64-token penalty window.
public struct SamplingOptions: Sendable, Equatable {
    /// Divides the logits before the draw; 0 or below means greedy (the most likely token, no draw).
    public var temperature: Float = 0.8
    /// Keeps the `topK` most likely tokens; 0 or below keeps all.
    public var topK: Int = 40
    /// Keeps the smallest set of most likely tokens whose probability reaches `topP`; 1 keeps all.
    public var topP: Float = 0.95
    /// Drops tokens less likely than `minP` times the most likely one; 0 keeps all.
    public var minP: Float = 0.05
    /// CTRL-style repetition penalty (Keskar et al. 2019, with llama.cpp's fix for negative logits):
    /// a logit of a token seen in the window is divided by it when positive and multiplied when negative.
    public var repeatPenalty: Float = 1
    /// Subtracted once from the logit of every token seen in the window (OpenAI's presence penalty).
    public var presencePenalty: Float = 0
    /// Subtracted once per occurrence in the window (OpenAI's frequency penalty).
    public var frequencyPenalty: Float = 0
    /// How many of the most recent tokens (prompt included) the three penalties look at; 0 disables them.
    public var penaltyWindow: Int = 64
    /// Keys every draw: the same seed, prompt and options give the same tokens.
    public var seed: UInt64 = 0

    public init() {}

    /// Always the most likely token (after penalties); what `--greedy` and llama.cpp's `temperature=0` do.
    public static var greedy: SamplingOptions {
        var options = SamplingOptions()
        options.temperature = 0
        return options
    }

    public var isGreedy: Bool { temperature <= 0 }

    var penaltiesActive: Bool {
        penaltyWindow > 0 && (repeatPenalty != 1 || presencePenalty != 0 || frequencyPenalty != 0)
    }

    /// Throws when a value is outside the range where it means anything.
    public func validate() throws {
        func check(_ ok: Bool, _ name: String, _ value: String, _ range: String) throws {
            if !ok { throw InferenceError.invalidOption(name: name, value: value, expected: range) }
        }
        try check(temperature.isFinite, "temperature", "\(temperature)", "a finite number (0 or less is greedy)")
        try check(topP > 0 && topP <= 1, "top-p", "\(topP)", "a number in (0, 1]")
        try check(minP >= 0 && minP <= 1, "min-p", "\(minP)", "a number in [0, 1]")
        try check(repeatPenalty > 0 && repeatPenalty.isFinite, "repeat-penalty", "\(repeatPenalty)", "a positive number (1 disables it)")
        try check(presencePenalty.isFinite, "presence-penalty", "\(presencePenalty)", "a finite number")
        try check(frequencyPenalty.isFinite, "frequency-penalty", "\(frequencyPenalty)", "a finite number")
        try check(penaltyWindow >= 0, "penalty window", "\(penaltyWindow)", "0 or more tokens")
    }
}
