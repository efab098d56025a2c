/// The train step's loss curve with the checkpoints written and the resumes from them.
///
/// A finished step recorded every step's loss in its output (`source` `output`); an unfinished one is drawn from
/// its progress events, which hold the loss at each checkpoint interval (`source` `progress_events`).
public struct LossCurve: Sendable, Equatable, Encodable {
    public enum Source: String, Sendable, Encodable { case output, progressEvents = "progress_events" }

    public struct Point: Sendable, Equatable, Encodable {
        public var step: Int
        public var loss: Double
        /// The debiased moving average of the losses up to this point, as `adapt work` shows it.
        public var smoothed: Double

        public init(step: Int, loss: Double, smoothed: Double) {
            self.step = step
            self.loss = loss
            self.smoothed = smoothed
        }
    }

    /// A checkpoint written at `step`, or a resume from one.
    public struct Mark: Sendable, Equatable, Encodable {
        public var step: Int
        public var checkpoint: String
        public var attempt: Int

        public init(step: Int, checkpoint: String, attempt: Int) {
            self.step = step
            self.checkpoint = checkpoint
            self.attempt = attempt
        }
    }

    public var jobID: String
    public var totalSteps: Int
    public var source: Source
    public var points: [Point]
    public var checkpoints: [Mark]
    public var resumes: [Mark]

    public init(jobID: String, totalSteps: Int, source: Source, points: [Point], checkpoints: [Mark], resumes: [Mark]) {
        self.jobID = jobID
        self.totalSteps = totalSteps
        self.source = source
        self.points = points
        self.checkpoints = checkpoints
        self.resumes = resumes
    }

    enum CodingKeys: String, CodingKey {
        case source, steps, smoothed, checkpoints, resumes
        case jobID = "job_id", totalSteps = "total_steps"
    }

    /// The report's `training`: the points as parallel `steps` and `smoothed` arrays beside the report's `losses`.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(jobID, forKey: .jobID)
        try c.encode(totalSteps, forKey: .totalSteps)
        try c.encode(source, forKey: .source)
        try c.encode(points.map(\.step), forKey: .steps)
        try c.encode(points.map(\.smoothed), forKey: .smoothed)
        try c.encode(checkpoints, forKey: .checkpoints)
        try c.encode(resumes, forKey: .resumes)
    }
}
