import JobQueue
import Report

/// A job's attempts read off its events: each claim (an event into `running`) opens a bar, the next event out of
/// `running` closes it and says how (`ReportAttempt.End`), with the words of that event (and, for a deferral,
/// of the progress note the step wrote just before it).
enum ReportAttempts {
    static func of(_ events: [EventRecord], origin: Int64, now: Int64) -> [ReportAttempt] {
        var attempts: [ReportAttempt] = []
        var open: (attempt: Int, at: Int64)?
        var yieldNote: String?
        for event in events.sorted(by: { $0.id < $1.id }) {
            if event.to == .running, event.from != .running {
                open = (event.attempt, event.at)
                yieldNote = nil
                continue
            }
            guard event.from == .running, let started = open else { continue }
            if event.to == .running {
                if let message = event.message, message.hasPrefix("deferred: ") || message.hasPrefix("yielded: ") { yieldNote = message }
                continue
            }
            let (end, reason) = classify(event, yieldNote: yieldNote)
            attempts.append(ReportAttempt(attempt: started.attempt, startMilliseconds: started.at - origin,
                                          endMilliseconds: max(event.at, started.at) - origin, startedAt: started.at,
                                          endedAt: event.at, end: end, reason: reason))
            open = nil
            yieldNote = nil
        }
        if let started = open {
            attempts.append(ReportAttempt(attempt: started.attempt, startMilliseconds: started.at - origin,
                                          endMilliseconds: max(now, started.at) - origin, startedAt: started.at, endedAt: nil,
                                          end: .running, reason: nil))
        }
        return attempts
    }

    /// How the event that took a job out of `running` ended its attempt. The words come from JobQueue's transition
    /// notes (JobQueue+Lease.swift, JobQueue.swift) and the step runner's deferral notes (StepRunner.swift).
    static func classify(_ event: EventRecord, yieldNote: String?) -> (ReportAttempt.End, String?) {
        let message = event.message
        switch event.to {
        case .succeeded: return (.succeeded, nil)
        case .failed: return (.retried, message)
        case .discarded: return (.discarded, message)
        case .cancelled: return (.cancelled, message)
        case .ready, .pending, .running:
            let text = message ?? ""
            if text.hasPrefix("snoozed until") {
                guard let note = yieldNote else { return (.deferred, text) }
                let isYield = note.hasPrefix("yielded: ")
                return (isYield ? .yielded : .deferred, String(note.drop { $0 != " " }.dropFirst()))
            }
            if text.hasPrefix("lease of ") { return (.rescued, text) }
            if text.hasPrefix("worker "), text.contains(" died ") { return (.killed, text) }
            return (.released, message)
        }
    }
}
