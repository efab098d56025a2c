import AdaptCore
import Adapters
import Foundation

/// The adapter a run's training starts from instead of a fresh LoRA initialisation (its weights parent): the
/// step-0 weights are its tensors, bit for bit.
///
/// It must have been trained for this run's adapter shape: the same base-model digest, chat convention and
/// template, rank, alpha and targets, and tensors of the same names and shapes (the architecture). Its digest
/// is recorded in every checkpoint, so a resume that starts from another parent is refused.
public struct WeightsParent: Sendable, Equatable {
    public let adapter: AdapterFile
    /// The SHA-256 of the adapter file (its name in the blob store and the registry).
    public let digest: Digest

    public init(adapter: AdapterFile, digest: Digest) {
        self.adapter = adapter
        self.digest = digest
    }

    /// Reads a weights parent from an adapter file's bytes, verifying them.
    public init(data: Data, name: String) throws {
        let (adapter, digest) = try AdapterFile.decode(data, name: name)
        self.init(adapter: adapter, digest: digest)
    }
}

/// Why an adapter cannot be a run's weights parent: the first field it was trained with that the run does not use.
public struct WeightsParentMismatch: Error, Sendable, Equatable, CustomStringConvertible {
    /// `base model`, `chat convention`, `chat template`, `rank`, `alpha`, `targets` or `tensor layout`.
    public let field: String
    /// The parent's value and this run's, as printed.
    public let parent: String
    public let run: String

    public init(field: String, parent: String, run: String) {
        self.field = field
        self.parent = parent
        self.run = run
    }

    /// `rank 16 (this run: 8)`: the reason a pipeline records when it trains from zero instead.
    public var reason: String { "\(field) \(parent) (this run: \(run))" }

    public var description: String {
        "the adapter to start from was trained with \(field) \(parent), this run uses \(run); "
            + "train with the parent's settings, or without --init-adapter to start from zero"
    }
}

extension WeightsParent {
    /// The first field in which this parent differs from what a run of `fresh`'s layout, on `baseModelDigest`,
    /// formatting through `convention`/`templateDigest` with `settings`, would train; nil when it fits.
    public func mismatch(baseModelDigest: Digest, convention: String, templateDigest: Digest?, settings: AdapterSettings,
                         layout fresh: NamedTensors) -> WeightsParentMismatch? {
        let metadata = adapter.metadata
        if metadata.baseModelDigest != baseModelDigest {
            return WeightsParentMismatch(field: "base model", parent: metadata.baseModelDigest.short, run: baseModelDigest.short)
        }
        if metadata.chatConvention != convention {
            return WeightsParentMismatch(field: "chat convention", parent: metadata.chatConvention, run: convention)
        }
        if metadata.templateDigest != templateDigest {
            return WeightsParentMismatch(field: "chat template", parent: metadata.templateDigest?.short ?? "none",
                                         run: templateDigest?.short ?? "none")
        }
        if metadata.rank != settings.rank {
            return WeightsParentMismatch(field: "rank", parent: "\(metadata.rank)", run: "\(settings.rank)")
        }
        if metadata.alpha.bitPattern != settings.alpha.bitPattern {
            return WeightsParentMismatch(field: "alpha", parent: "\(metadata.alpha)", run: "\(settings.alpha)")
        }
        if metadata.targets.sorted() != settings.targets.sorted() {
            return WeightsParentMismatch(field: "targets", parent: metadata.targets.joined(separator: ","),
                                         run: settings.targets.joined(separator: ","))
        }
        if arranged(like: fresh) == nil {
            return WeightsParentMismatch(field: "tensor layout", parent: "\(adapter.tensors.count) tensors (\(adapter.tensors.scalarCount) values)",
                                         run: "\(fresh.count) tensors (\(fresh.scalarCount) values)")
        }
        return nil
    }

    /// The parent's tensors in `fresh`'s order (an adapter written elsewhere may list them in another), or nil
    /// when a name is missing or extra or a shape differs.
    public func arranged(like fresh: NamedTensors) -> NamedTensors? {
        let tensors = adapter.tensors
        guard tensors.count == fresh.count else { return nil }
        var index: [String: Int] = [:]
        for (i, name) in tensors.names.enumerated() where index.updateValue(i, forKey: name) != nil { return nil }
        var values: [[Float]] = []
        values.reserveCapacity(fresh.count)
        for (name, shape) in zip(fresh.names, fresh.shapes) {
            guard let i = index[name], tensors.shapes[i] == shape, tensors.values[i].count == NamedTensors.elementCount(of: shape)
            else { return nil }
            values.append(tensors.values[i])
        }
        return NamedTensors(names: fresh.names, shapes: fresh.shapes, values: values)
    }
}
