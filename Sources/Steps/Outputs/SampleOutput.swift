import AdaptCore
import Pipelines
import ReplayBuffer

/// What the sample step drew: ReplayBuffer's report of the draw (the training and held-out snapshot blobs and
/// their sizes), written as it is, and the night's weights parent.
public struct SampleOutput: StepResult, Equatable {
    public static let kind = StepKind.sample

    /// The version a night's candidate starts from: the lineage's active version when the sample step ran.
    public struct WeightsParent: Codable, Sendable, Equatable {
        /// `lineage/vN`.
        public var version: String
        public var adapterBlob: Digest

        public init(version: String, adapterBlob: Digest) {
            self.version = version
            self.adapterBlob = adapterBlob
        }

        enum CodingKeys: String, CodingKey { case version, adapterBlob = "adapter_blob" }
    }

    public var report: SampleReport
    /// Fixed here, once, so the train step, replay and resume all read the same one: `.some(nil)` when the run
    /// starts from zero (`train.init: fresh`, or no active version); nil (the field left out) in a run planned
    /// before warm starts.
    public var weightsParent: WeightsParent??

    public init(report: SampleReport, weightsParent: WeightsParent??) {
        self.report = report
        self.weightsParent = weightsParent
    }

    public var trainSnapshot: Digest { report.trainSnapshot }
    public var heldOutSnapshot: Digest { report.heldOutSnapshot }
    public var heldOutExamples: Int { report.heldOutExamples }

    enum CodingKeys: String, CodingKey { case weightsParent = "weights_parent" }

    public init(from decoder: Decoder) throws {
        report = try SampleReport(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        weightsParent = c.contains(.weightsParent) ? .some(try c.decodeIfPresent(WeightsParent.self, forKey: .weightsParent)) : nil
    }

    public func encode(to encoder: Encoder) throws {
        try report.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        // An explicit null when the run starts from zero; nothing in a run planned before the field.
        if let weightsParent {
            if let parent = weightsParent { try c.encode(parent, forKey: .weightsParent) } else { try c.encodeNil(forKey: .weightsParent) }
        }
    }
}
