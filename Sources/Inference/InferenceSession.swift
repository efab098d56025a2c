import AdaptCore
import Model
import Synchronization

/// What to generate from.
public enum Prompt: Sendable, Equatable {
    /// A conversation, rendered by the session's chat formatter (the assistant answers next).
    case chat([ChatMessage])
    /// Text used exactly as given (special tokens in it are parsed): for a person's own prompt, never for data.
    case text(String)
    /// Token ids used exactly as given.
    case tokens([Int32])
}

/// One loaded base model that generates text, with at most one LoRA adapter attached at a time.
///
/// The model is loaded once; attaching, detaching or swapping an adapter only changes which LoRA weights the
/// forward pass adds, so it costs no reload. The session keeps its key/value cache and the tokens it holds
/// between calls: a prompt that starts like the previous prompt plus answer (the same system line, a chat one
/// turn longer) is processed only from the first token that differs. Changing the adapter changes every
/// cached key and value, so it empties the cache.
///
/// Being an actor, the session runs one call at a time. `generate` does not suspend between tokens (so no
/// other call can change the adapter or the cache halfway through an answer); it occupies one thread of the
/// cooperative pool while it runs. `stop()` is the one thing callable meanwhile, from any thread or task, and
/// cancelling the generating task has the same effect.
public actor InferenceSession<Backend: LanguageModelBackend> {
    private let backend: Backend
    public nonisolated let vocabulary: any GenerationVocabulary
    public nonisolated let formatter: any PromptFormatter
    /// The digest of the base model file, checked against every adapter.
    public nonisolated let baseModelDigest: Digest
    private let catalog: (any AdapterCatalog<Backend.Adapter>)?

    private var adapter: AdapterBundle<Backend.Adapter>?
    private var lineage: String?
    private var fallbackReason: String?
    /// Exactly the tokens whose keys and values the backend holds, in order.
    private var history: [Int32] = []
    private let stopRequested = Atomic<Bool>(false)

    /// `catalog` is where `attach(lineage:)` and `reload()` find a lineage's active adapter.
    public init(backend: sending Backend, vocabulary: any GenerationVocabulary, formatter: any PromptFormatter,
                baseModelDigest: Digest, catalog: (any AdapterCatalog<Backend.Adapter>)? = nil) {
        self.backend = backend
        self.vocabulary = vocabulary
        self.formatter = formatter
        self.baseModelDigest = baseModelDigest
        self.catalog = catalog
    }

    // MARK: Adapters

    /// What the next generation runs with.
    public var attached: AttachedModel {
        guard let adapter else { return .base(reason: fallbackReason) }
        return .adapter(name: adapter.name, digest: adapter.digest, lineage: adapter.lineage, version: adapter.version)
    }

    /// Attaches `bundle`, replacing any adapter attached before. Refuses, and changes nothing, when it was
    /// made for another base model or chat convention or does not fit the model.
    @discardableResult
    public func attach(_ bundle: AdapterBundle<Backend.Adapter>) throws -> AttachedModel {
        try check(bundle)
        install(bundle, lineage: bundle.lineage)
        return attached
    }

    /// Replaces the attached adapter with `bundle` (the same as `attach`, named for what it does).
    @discardableResult
    public func swap(to bundle: AdapterBundle<Backend.Adapter>) throws -> AttachedModel {
        try attach(bundle)
    }

    /// Follows `lineage`: attaches its active version, or falls back to the base model and says so in
    /// `AttachedModel.base(reason:)` when the lineage has none yet.
    @discardableResult
    public func attach(lineage: String) throws -> AttachedModel {
        let active = try activeAdapter(of: lineage)
        if let active { try check(active) }
        install(active, lineage: lineage)
        return attached
    }

    /// Picks up the followed lineage's active version if it changed since it was attached (a promotion or a
    /// rollback); keeps the cache when it did not. An unchanged version costs one digest lookup: the file is
    /// neither read nor hashed again (the attached weights were verified when they were loaded, and adapter
    /// files are never rewritten).
    @discardableResult
    public func reload() throws -> AttachedModel {
        guard let lineage, let catalog else { throw InferenceError.noLineageAttached }
        if try catalog.activeDigest(lineage: lineage) == adapter?.digest { return attached }
        let active = try activeAdapter(of: lineage)
        if active?.digest == adapter?.digest { return attached }
        if let active { try check(active) }
        install(active, lineage: lineage)
        return attached
    }

    /// Back to the base model.
    public func detach() {
        install(nil, lineage: nil)
    }

    private func activeAdapter(of lineage: String) throws -> AdapterBundle<Backend.Adapter>? {
        guard let catalog else { throw InferenceError.noLineageAttached }
        return try catalog.activeAdapter(lineage: lineage)
    }

    private func check(_ bundle: AdapterBundle<Backend.Adapter>) throws {
        try bundle.checkMade(for: baseModelDigest, convention: formatter.conventionName)
        try backend.validate(bundle.weights, name: bundle.name)
    }

    private func install(_ bundle: AdapterBundle<Backend.Adapter>?, lineage: String?) {
        if bundle?.digest != adapter?.digest { clearCache() }
        adapter = bundle
        self.lineage = lineage
        fallbackReason = (bundle == nil && lineage != nil)
            ? "lineage \(lineage!) has no active adapter version yet; generating with the base model" : nil
    }

    // MARK: Cache

    /// The tokens the cache holds (the last prompt and answer, minus the final sampled token).
    public var cachedTokens: [Int32] { history }

    /// Forgets the cache; the next prompt is processed from its first token.
    public func clearCache() {
        history.removeAll()
        backend.truncateCache(to: 0)
    }

    /// The ids `prompt` formats to.
    public func tokens(for prompt: Prompt, enableThinking: Bool = false) throws -> [Int32] {
        switch prompt {
        case let .tokens(ids): return ids
        case let .text(text): return vocabulary.encode(text)
        case let .chat(messages): return vocabulary.encode(try formatter.render(messages, enableThinking: enableThinking))
        }
    }

    // MARK: Generation

    /// Ends the generation running now (from any task); it returns what was produced so far.
    public nonisolated func stop() {
        stopRequested.store(true, ordering: .relaxed)
    }

    /// Generates an answer to `prompt`, handing complete UTF-8 text to `onText` as it is produced.
    public func generate(_ prompt: Prompt, options: GenerationOptions = GenerationOptions(),
                         onText: @Sendable (String) -> Void = { _ in }) async throws -> GenerationResult {
        try options.sampling.validate()
        guard options.maxTokens >= 0 else {
            throw InferenceError.invalidOption(name: "max-tokens", value: "\(options.maxTokens)", expected: "0 or more")
        }
        stopRequested.store(false, ordering: .relaxed)
        let promptIDs = try tokens(for: prompt, enableThinking: options.enableThinking)
        guard !promptIDs.isEmpty else { throw InferenceError.emptyPrompt }
        guard promptIDs.count < backend.contextLength else {
            throw InferenceError.promptTooLong(tokens: promptIDs.count, contextLength: backend.contextLength)
        }
        if let bad = promptIDs.first(where: { $0 < 0 || Int($0) >= backend.vocabularySize }) {
            throw InferenceError.tokenOutOfVocabulary(id: bad, vocabularySize: backend.vocabularySize)
        }

        let clock = ContinuousClock()
        let promptStart = clock.now
        // Reuse the longest common prefix; at least the last prompt token is run, for its logits.
        let reused = min(Self.commonPrefix(history, promptIDs), promptIDs.count - 1)
        history.removeSubrange(reused...)
        backend.truncateCache(to: reused)
        var logits = try evaluate(Array(promptIDs[reused...]))
        let promptEnd = clock.now

        let sampler = Sampler(options.sampling)
        var streamer = TextStreamer(stopStrings: options.stopStrings)
        let endTokens = vocabulary.endOfGenerationTokens
        var generated: [Int32] = []
        var reason = FinishReason.maxTokens
        while true {
            if stopRequested.load(ordering: .relaxed) || Task.isCancelled { reason = .stopped; break }
            if generated.count >= options.maxTokens { reason = .maxTokens; break }
            if history.count >= backend.contextLength { reason = .contextFull; break }
            let token = sampler.sample(logits, history: history[...], position: history.count)
            if endTokens.contains(token) { reason = .endOfGeneration; break }
            generated.append(token)
            let text = streamer.append(vocabulary.bytes(of: token))
            if !text.isEmpty { onText(text) }
            if streamer.isStopped { reason = .stopString; break }
            // The last token's logits are only needed if another token follows.
            if generated.count < options.maxTokens, history.count < backend.contextLength {
                logits = try evaluate([token])
            }
        }
        let rest = streamer.finish()
        if !rest.isEmpty { onText(rest) }
        let end = clock.now

        return GenerationResult(text: streamer.text, tokenIDs: generated, finishReason: reason,
                                promptTokens: promptIDs.count, cachedTokens: reused,
                                promptMilliseconds: Self.milliseconds(promptEnd - promptStart),
                                generationMilliseconds: Self.milliseconds(end - promptEnd), model: attached)
    }

    /// Runs tokens through the model and records them as cached; on failure the cache is emptied, since the
    /// backend may hold part of the batch.
    private func evaluate(_ tokens: [Int32]) throws -> [Float] {
        do {
            let logits = try backend.evaluate(tokens, adapter: adapter?.weights)
            history.append(contentsOf: tokens)
            return logits
        } catch {
            clearCache()
            if let error = error as? InferenceError { throw error }
            throw InferenceError.model(reason: "\(error)")
        }
    }

    static func commonPrefix(_ a: [Int32], _ b: [Int32]) -> Int {
        var n = 0
        let limit = min(a.count, b.count)
        while n < limit, a[n] == b[n] { n += 1 }
        return n
    }

    static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
