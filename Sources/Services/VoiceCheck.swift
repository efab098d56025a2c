import AdaptCore
import Evaluation
import Foundation
import Inference
import Model
import Registry
import ReplayBuffer
import Storage

/// `adapt eval voice`: the base model and a lineage's active adapter answer the lineage's held-out prompts
/// greedily; the replies are measured against the phrases the lineage's training replies recur.
public enum VoiceCheck {
    /// What to check, as the command line gave it.
    public struct Request: Sendable {
        public let lineage: Lineage
        /// nil: the state's default model.
        public let model: URL?
        public let maxTokens: Int
        /// nil: one training reply in ten, at least 2.
        public let minCompletions: Int?
        public let repeatPenalty: Double
        /// nil: OpenBLAS's own choice.
        public let threads: Int?
        /// `--chat-format`: nil formats prompts through the model's chat template (required then).
        public let chatFormat: ChatConvention?
        let sampling: SamplingOptions

        /// Throws `InferenceError` for a repetition penalty the sampler refuses.
        public init(lineage: Lineage, model: URL?, maxTokens: Int, minCompletions: Int?, repeatPenalty: Double, threads: Int?,
                    chatFormat: ChatConvention? = nil) throws {
            var sampling = SamplingOptions.greedy
            sampling.repeatPenalty = Float(repeatPenalty)
            try sampling.validate()
            (self.lineage, self.model, self.maxTokens, self.minCompletions) = (lineage, model, maxTokens, minCompletions)
            (self.repeatPenalty, self.threads, self.sampling, self.chatFormat) = (repeatPenalty, threads, sampling, chatFormat)
        }
    }

    /// Runs the check on `database` (only read) and the state's blobs; `progress` hears what starts.
    public static func run(_ request: Request, state: StateDirectory, database: Database,
                           progress: (String) -> Void) async throws -> VoiceReport {
        let lineage = request.lineage.name
        if let threads = request.threads { try BLAS.setThreads(threads) }
        let store = try ReplayStore(database: database)
        guard try store.lineages().contains(lineage) else { throw VoiceCheckError.unknownLineage(lineage) }
        let heldOut = try store.examples(lineage: lineage, split: .heldOut)
        guard !heldOut.isEmpty else { throw VoiceCheckError.noHeldOutExamples(lineage) }
        let replies = try store.examples(lineage: lineage, split: .train).flatMap(trainingReplies)
        guard !replies.isEmpty else { throw VoiceCheckError.noTrainingCompletions(lineage) }
        let phrases = RecurringPhrases(learningFrom: replies, minCompletions: request.minCompletions)

        let registry = try AdapterRegistry(database: database, blobs: state.blobs)
        guard let version = try registry.active(lineage: ShortIdentifier(request.lineage)) else {
            throw VoiceCheckError.noActiveAdapter(lineage)
        }
        let modelURL = request.model ?? state.defaultModel
        guard FileManager.default.fileExists(atPath: modelURL.path) else {
            throw VoiceCheckError.missingModel(path: modelURL.path, isDefault: request.model == nil)
        }
        let base = try BaseModel.load(modelURL, chatFormat: request.chatFormat)
        guard let bundle = try RegistryAdapterCatalog(registry: registry).activeAdapter(lineage: lineage) else {
            throw VoiceCheckError.noActiveAdapter(lineage)
        }
        let session = base.session()
        // Training formats prompts with the template's default thinking switch; so does this check.
        let options = GenerationOptions(sampling: request.sampling, maxTokens: request.maxTokens, enableThinking: true)
        let prompts = heldOut.map(prompt)

        let clock = ContinuousClock()
        let start = clock.now
        progress("answering \(prompts.count) held-out prompts with the base model, then with \(lineage)/\(version.name)")
        var baseReplies: [GenerationResult] = []
        for messages in prompts { baseReplies.append(try await session.generate(.chat(messages), options: options)) }
        try await session.attach(bundle)
        var adapterReplies: [GenerationResult] = []
        for messages in prompts { adapterReplies.append(try await session.generate(.chat(messages), options: options)) }
        let (seconds, attoseconds) = (clock.now - start).components

        return VoiceReport(lineage: lineage, version: version.name, adapterDigest: version.adapterDigest,
                           modelName: modelURL.lastPathComponent, modelDigest: base.digest, maxTokens: request.maxTokens,
                           repeatPenalty: request.repeatPenalty,
                           phrases: phrases, trainingReplies: replies.count, examples: heldOut.map(\.id),
                           base: baseReplies, adapter: adapterReplies, seconds: Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Every reply training takes the loss on: each assistant turn of a conversation, or the completion.
    static func trainingReplies(_ example: Example) -> [String] {
        guard let turns = example.turns else { return [example.completion] }
        return turns.filter { $0.role == .assistant }.map(\.content)
    }

    /// What held-out scoring conditions the last reply on: a single exchange's user message (its system line
    /// unused, as in training), or every turn of a conversation before its last assistant turn.
    static func prompt(_ example: Example) -> [ChatMessage] {
        guard let turns = example.turns else { return [.user(example.prompt)] }
        let end = turns.lastIndex { $0.role == .assistant } ?? turns.endIndex
        return turns[..<end].map { ChatMessage(role: $0.role.rawValue, content: $0.content) }
    }
}
