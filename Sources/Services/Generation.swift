import AdaptCore
import Adapters
import Foundation
import Inference
import Model
import Registry
import Storage

/// `adapt generate`: answer a prompt with the base model, a lineage's active adapter or an adapter file;
/// or, with `compare`, with the adapter and then the base model.
public enum Generation {
    /// What to generate, as the command line gave it; nil settings keep llama.cpp's defaults.
    public struct Request: Sendable {
        public var prompt: String
        public var system: String?
        /// A registry lineage (the registry's identifier rule: existing lineages stay reachable).
        public var lineage: String?
        public var adapter: URL?
        /// nil: the state's default model.
        public var model: URL?
        public var compare = false
        /// Load and attach `adapter` this many times, timing each phase (scripts/bench/generate).
        public var swapRepeats = 1
        public var threads: Int?
        /// `--base-weights`: the frozen matrices kept in the file's types (the default) or dequantized to f32.
        public var baseWeights = BaseWeightStorage.quantized
        public var maxTokens = 256
        public var stopStrings: [String] = []
        public var enableThinking = true
        /// `--chat-format`: the convention prompts are formatted in; nil: the model's template (required then).
        public var chatFormat: ChatConvention?
        public var temperature: Double?
        public var topK: Int?
        public var topP: Double?
        public var minP: Double?
        public var repeatPenalty: Double?
        public var presencePenalty: Double?
        public var frequencyPenalty: Double?
        public var seed: UInt64?
        public var greedy = false

        public init(prompt: String) { self.prompt = prompt }

        /// Throws `RequestError` for settings no generation can take (a usage error, checked before loading).
        public func options() throws -> GenerationOptions {
            var sampling = SamplingOptions()
            if let v = temperature { sampling.temperature = Float(v) }
            if let v = topK { sampling.topK = v }
            if let v = topP { sampling.topP = Float(v) }
            if let v = minP { sampling.minP = Float(v) }
            if let v = repeatPenalty { sampling.repeatPenalty = Float(v) }
            if let v = presencePenalty { sampling.presencePenalty = Float(v) }
            if let v = frequencyPenalty { sampling.frequencyPenalty = Float(v) }
            if let v = seed { sampling.seed = v }
            if greedy { sampling.temperature = 0 }
            do { try sampling.validate() } catch { throw RequestError(message: "\(error)") }
            return GenerationOptions(sampling: sampling, maxTokens: maxTokens, stopStrings: stopStrings, enableThinking: enableThinking)
        }
    }

    /// A request that cannot be run as given; the command line reports it as a usage error.
    public struct RequestError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// What came back: one answer, or the adapter's and the base model's.
    public enum Outcome: Sendable {
        case answer(GenerationResult)
        case comparison(base: GenerationResult, adapter: GenerationResult, adapterName: String)
    }

    /// Runs `request`. `database` is opened only when a lineage is named; `note` hears which adapter answers
    /// and swap timings; `stream` receives a single answer's text as it is generated (not a comparison's).
    public static func run(_ request: Request, state: StateDirectory, database: () throws -> Database,
                           note: (String) -> Void, stream: @escaping @Sendable (String) -> Void) async throws -> Outcome {
        let options = try request.options()
        if let threads = request.threads { try BLAS.setThreads(threads) }
        if request.compare, request.lineage == nil, request.adapter == nil { throw GenerateError.nothingToCompare }
        if let lineage = request.lineage, ShortIdentifier(lineage) == nil {
            throw RequestError(message: "--lineage must be 1 to 64 letters, digits, '.', '_' or '-'")
        }

        let base = try BaseModel.load(request.model ?? state.defaultModel, chatFormat: request.chatFormat, base: request.baseWeights)
        var catalog: RegistryAdapterCatalog?
        if request.lineage != nil {
            catalog = RegistryAdapterCatalog(registry: try AdapterRegistry(database: try database(), blobs: state.blobs))
        }
        let session = base.session(catalog: catalog)

        var messages: [ChatMessage] = []
        if let system = request.system { messages.append(.system(system)) }
        messages.append(.user(request.prompt))

        if let file = request.adapter {
            note(try await timedSwap(file, into: session, repeats: request.swapRepeats))
        } else if let lineage = request.lineage {
            switch try await session.attach(lineage: lineage) {
            case let .base(reason): note(reason ?? "generating with the base model")
            case let .adapter(name, digest, _, _): note("generating with adapter \(name) (\(digest.short))")
            }
        }

        if request.compare {
            // The adapter answers first; the base model then gets the adapter's answer length as its limit.
            guard case let .adapter(name, _, _, _) = await session.attached else { throw GenerateError.nothingToCompare }
            let adapted = try await session.generate(.chat(messages), options: options)
            await session.detach()
            var baseOptions = options
            baseOptions.maxTokens = min(options.maxTokens, max(1, adapted.generatedTokens))
            let answer = try await session.generate(.chat(messages), options: baseOptions)
            return .comparison(base: answer, adapter: adapted, adapterName: name)
        }
        return .answer(try await session.generate(.chat(messages), options: options, onText: stream))
    }

    /// Loads and attaches the adapter file `repeats` times, timing each phase of a hot swap (for
    /// scripts/bench/generate): reading the file, verifying its digest, decoding its tensors into LoRA weights,
    /// attaching them. Returns the line of medians; the adapter stays attached.
    static func timedSwap(_ url: URL, into session: InferenceSession<LlamaBackend>, repeats: Int) async throws -> String {
        let clock = ContinuousClock()
        var phases: [[Double]] = Array(repeating: [], count: 4)
        var name = url.lastPathComponent
        for run in 0..<repeats {
            if run > 0 { await session.detach() }
            let start = clock.now
            let data = try AdapterFile.readBytes(from: url)
            let read = clock.now
            let verified = try AdapterFile.verify(data, name: url.lastPathComponent)
            let checked = clock.now
            let bundle = try AdapterBundle(file: try AdapterFile.decode(verified), digest: verified.digest, name: verified.name)
            let decoded = clock.now
            try await session.attach(bundle)
            let attached = clock.now
            name = bundle.name
            for (i, span) in [read - start, checked - read, decoded - checked, attached - decoded].enumerated() {
                phases[i].append(seconds(span) * 1000)
            }
        }
        let medians = phases.map { values in values.sorted()[values.count / 2] }
        // The first swap of a process also pays for touching fresh memory; later ones reuse freed pages.
        let first = phases.map { $0[0] }.reduce(0, +)
        func f(_ x: Double) -> String { String(format: "%.3f", x) }
        return "adapter \(name) read in \(f(medians[0])) ms, verified in \(f(medians[1])) ms, "
            + "decoded in \(f(medians[2])) ms, attached in \(f(medians[3])) ms, total \(f(medians.reduce(0, +))) ms "
            + "(median of \(repeats); the first swap \(f(first)) ms)"
    }


    static func seconds(_ d: Duration) -> Double {
        let (seconds, attoseconds) = d.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Failures of `adapt generate` that are not the session's.
public enum GenerateError: Error, CustomStringConvertible {
    case nothingToCompare

    public var description: String {
        switch self {
        case .nothingToCompare:
            return "--compare needs an adapter: give --adapter FILE, or a --lineage that has an active version"
        }
    }
}
