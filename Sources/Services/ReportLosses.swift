import Foundation
import JobQueue
import Report
import Steps
import Training

/// The train step's loss curve: every step's loss from its output when it finished, else the losses its progress
/// events recorded; checkpoints and resumes from those events (`TrainingNote`).
enum ReportLosses {
    static func of(_ job: JobRecord, events: [EventRecord]) -> LossCurve? {
        var checkpoints: [LossCurve.Mark] = [], resumes: [LossCurve.Mark] = []
        var progress: [(step: Int, loss: Double)] = []
        var total = job.input["steps"]?.intValue ?? 0
        for event in events where event.from == .running && event.to == .running {
            switch event.message.flatMap(TrainingNote.init(message:)) {
            case let .resumed(checkpoint, step)?:
                resumes.append(LossCurve.Mark(step: step, checkpoint: checkpoint, attempt: event.attempt))
            case let .step(note)?:
                total = max(total, note.total)
                if let loss = note.loss { progress.append((note.step, loss)) }
                if let checkpoint = note.checkpoint, !checkpoints.contains(where: { $0.step == checkpoint.step }) {
                    checkpoints.append(LossCurve.Mark(step: checkpoint.step, checkpoint: checkpoint.name, attempt: event.attempt))
                }
            case nil:
                continue
            }
        }
        let source: LossCurve.Source
        let losses: [(step: Int, loss: Double)]
        if job.state == .succeeded, let output = job.output, let train = try? TrainOutput(jobOutput: output) {
            source = .output
            losses = train.losses.enumerated().map { ($0.offset + 1, $0.element) }
            total = max(total, train.steps)
        } else {
            source = .progressEvents
            // A resumed attempt reports again the steps after its checkpoint: the latest report of a step stands.
            var byStep: [Int: Double] = [:]
            for point in progress { byStep[point.step] = point.loss }
            losses = byStep.keys.sorted().map { ($0, byStep[$0]!) }
        }
        guard !losses.isEmpty || !checkpoints.isEmpty || !resumes.isEmpty else { return nil }
        var history: [Double] = []
        let points = losses.map { point -> LossCurve.Point in
            history.append(point.loss)
            return LossCurve.Point(step: point.step, loss: point.loss, smoothed: StepProgress.smoothed(history))
        }
        return LossCurve(jobID: job.id.description, totalSteps: total, source: source, points: points,
                         checkpoints: checkpoints.sorted { $0.step < $1.step }, resumes: resumes)
    }
}
