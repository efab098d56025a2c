import AdaptCore

/// A LoRA adapter ready to attach: its weights and what it was made for.
public struct AdapterBundle<Weights>: @unchecked Sendable {
    // Weights are immutable tensors once loaded; the bundle is only read after it is built, so sharing it
    // between tasks is safe even when the weight type itself is a class.
    public let weights: Weights
    /// How the adapter is named to people: a file name or `lineage@version`.
    public let name: String
    /// The adapter file's own digest.
    public let digest: Digest
    /// The digest of the base model file it was trained on.
    public let baseModelDigest: Digest
    /// The chat convention its training prompts were formatted with.
    public let chatConvention: String
    /// The lineage and version it came from, when it came from the registry.
    public let lineage: String?
    public let version: Int?

    public init(weights: Weights, name: String, digest: Digest, baseModelDigest: Digest, chatConvention: String,
                lineage: String? = nil, version: Int? = nil) {
        self.weights = weights
        self.name = name
        self.digest = digest
        self.baseModelDigest = baseModelDigest
        self.chatConvention = chatConvention
        self.lineage = lineage
        self.version = version
    }

    /// Refuses an adapter trained on another base model file or under another chat convention: its weights
    /// would be applied to activations they were never fitted to.
    public func checkMade(for baseModel: Digest, convention: String) throws {
        guard baseModelDigest == baseModel else {
            throw InferenceError.adapterForAnotherModel(adapter: name, expected: baseModel, actual: baseModelDigest)
        }
        guard chatConvention == convention else {
            throw InferenceError.adapterForAnotherConvention(adapter: name, expected: convention, actual: chatConvention)
        }
    }
}

/// Where a session finds the active adapter of a lineage (the registry, in the application).
public protocol AdapterCatalog<Weights>: Sendable {
    associatedtype Weights
    /// The lineage's active version, loaded and verified, or nil when none has been promoted yet.
    func activeAdapter(lineage: String) throws -> AdapterBundle<Weights>?
    /// The digest of the lineage's active adapter without reading its file (nil when none): what lets
    /// `InferenceSession.reload()` cost one lookup when nothing was promoted or rolled back.
    func activeDigest(lineage: String) throws -> Digest?
}

/// What a session generates with.
public enum AttachedModel: Sendable, Equatable {
    /// The base model alone; `reason` says why when a lineage was asked for (e.g. no active version yet).
    case base(reason: String?)
    case adapter(name: String, digest: Digest, lineage: String?, version: Int?)

    public var isBase: Bool { if case .base = self { true } else { false } }
}
