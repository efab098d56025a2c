import AdaptCore
import Foundation
import Model
import Pipelines
import Registry
import Steps

/// `adapt eval --lineage L --version N`: the engine's gate report for one registered version (Steps'
/// `VersionEvaluation`), and the JSON document the command prints.
public enum VersionGate {
    /// Scores `version` of `lineage` on the lineage's held-out set against the active version (or the base model)
    /// with `model`, the lineage's base model, and stores the gate report the engine made.
    /// `canary`: also run the forgetting guard (the engine's canary, the pipeline's default δ, δ_f and α); without it
    /// no guard runs, though the pipeline's default has one.
    public static func evaluate(lineage: ShortIdentifier, version: Int, model: URL, chatFormat: ChatConvention?, canary: Bool = false,
                                registry: AdapterRegistry, log: (String) -> Void) throws -> JSONValue {
        var parameters = EvalParameters()
        parameters.canary = canary ? CanaryGuard() : nil
        let request = VersionEvaluation.Request(lineage: lineage, version: version, model: try RegistryService.existingModel(model),
                                                parameters: parameters, chatFormat: chatFormat)
        return try json(try VersionEvaluation.run(request, registry: registry, log: log), lineage: lineage)
    }

    /// The gate report's own fields (`adapt gate --json`'s: `n, statistic, p_value, method, …, outcome`) with what it
    /// is bound to: `lineage`, `version`, `adapter_digest`, `held_out_digest`, `incumbent` (`{version,
    /// adapter_digest}`, null for the base model), both sides' mean NLL on the held-out set, and with the guard
    /// `canary_margins` (`{base, candidate, base_right_nll, candidate_right_nll}`, per canary item).
    static func json(_ result: VersionEvaluation.Result, lineage: ShortIdentifier) throws -> JSONValue {
        guard case var .object(fields) = try JSON.decode(JSONValue.self, from: JSON.canonical(result.gate), context: "the gate report") else {
            preconditionFailure("a gate report encodes as a JSON object")
        }
        fields["lineage"] = .string(lineage.value)
        fields["version"] = .string(result.version.name)
        fields["adapter_digest"] = .string(result.version.adapterDigest.hex)
        fields["held_out_digest"] = .string(result.heldOutDigest.hex)
        fields["incumbent"] = result.incumbent.map {
            .object(["version": .string($0.name), "adapter_digest": .string($0.adapterDigest.hex)])
        } ?? .null
        fields["candidate_mean_nll"] = result.candidateMeanNLL.map(JSONValue.double) ?? .null
        fields["incumbent_mean_nll"] = result.incumbentMeanNLL.map(JSONValue.double) ?? .null
        fields["cached_scores"] = .int(result.cachedScores)
        // Only with the guard, so the document without it keeps its keys.
        if let margins = result.canaryMargins {
            fields["canary_margins"] = try JSON.decode(JSONValue.self, from: JSON.canonical(margins), context: "the canary margins")
        }
        return .object(fields)
    }
}
