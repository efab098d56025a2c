/// The run's timeline: one lane per job, each attempt a bar on a shared time axis, every end that was not a plain
/// success marked with a numbered flag whose reason is listed under the chart.
///
/// Drawn in a 360-unit-wide view box, about a phone's width in CSS pixels, so its text stays legible there and
/// grows with a wider screen.
struct TimelineChart {
    let jobs: [ReportJob]

    static let width = 360.0
    static let left = 8.0, right = 352.0
    static let laneHeight = 30.0, top = 6.0, axisHeight = 22.0

    /// The marked ends in the order their flags are numbered: (job, attempt).
    var markedEnds: [(job: ReportJob, attempt: ReportAttempt)] {
        jobs.flatMap { job in job.attempts.filter { $0.end.isMarked }.map { (job, $0) } }
    }

    var svg: String {
        let end = Double(jobs.flatMap(\.attempts).map(\.endMilliseconds).max() ?? 1_000)
        let x = ChartScale(domain: 0...max(end, 1), range: (Self.left, Self.right))
        let height = Self.top + Double(jobs.count) * Self.laneHeight + Self.axisHeight
        var out = #"<svg class="chart timeline" viewBox="0 0 \#(Int(Self.width)) \#(Markup.coordinate(height))" role="img" aria-label="timeline of the run's jobs">"#
        var flag = 0
        for (lane, job) in jobs.enumerated() {
            let y = Self.top + Double(lane) * Self.laneHeight
            out += #"<text class="lane-label" x="\#(Self.left)" y="\#(Markup.coordinate(y + 9))">\#(Markup.text(Self.label(job)))</text>"#
            out += #"<line class="lane" x1="\#(Self.left)" x2="\#(Self.right)" y1="\#(Markup.coordinate(y + 19))" y2="\#(Markup.coordinate(y + 19))"/>"#
            for attempt in job.attempts {
                let x0 = x(Double(attempt.startMilliseconds)), x1 = max(x(Double(attempt.endMilliseconds)), x0 + 2)
                out += #"<rect class="bar end-\#(attempt.end.rawValue)" data-job="\#(Markup.attribute(job.id))" data-attempt="\#(attempt.attempt)" "#
                    + #"x="\#(Markup.coordinate(x0))" y="\#(Markup.coordinate(y + 13))" width="\#(Markup.coordinate(x1 - x0))" height="12" rx="2">"#
                    + "<title>\(Markup.text(Self.title(job, attempt)))</title></rect>"
                if attempt.end.isMarked {
                    flag += 1
                    out += #"<g class="mark end-\#(attempt.end.rawValue)"><circle cx="\#(Markup.coordinate(x1))" cy="\#(Markup.coordinate(y + 12))" r="5"/>"#
                        + #"<text x="\#(Markup.coordinate(x1))" y="\#(Markup.coordinate(y + 14.5))">\#(flag)</text></g>"#
                }
            }
        }
        let axisY = Self.top + Double(jobs.count) * Self.laneHeight + 2
        out += #"<line class="axis" x1="\#(Self.left)" x2="\#(Self.right)" y1="\#(Markup.coordinate(axisY))" y2="\#(Markup.coordinate(axisY))"/>"#
        for tick in TimeTicks.ticks(upTo: max(end, 1)) {
            let tx = x(tick.milliseconds)
            let anchor = tx < Self.left + 20 ? "start" : tx > Self.right - 20 ? "end" : "middle"
            out += #"<line class="tick" x1="\#(Markup.coordinate(tx))" x2="\#(Markup.coordinate(tx))" y1="\#(Markup.coordinate(axisY))" y2="\#(Markup.coordinate(axisY + 3))"/>"#
            out += #"<text class="tick-label" text-anchor="\#(anchor)" x="\#(Markup.coordinate(tx))" y="\#(Markup.coordinate(axisY + 13))">\#(Markup.text(tick.label))</text>"#
        }
        return out + "</svg>"
    }

    /// `train · succeeded`, or `fit (train) · succeeded` when a step's name is not its kind.
    static func label(_ job: ReportJob) -> String {
        (job.name == job.kind ? job.name : "\(job.name) (\(job.kind))") + " · \(job.state)"
    }

    static func title(_ job: ReportJob, _ attempt: ReportAttempt) -> String {
        "\(job.name) attempt \(attempt.attempt): \(attempt.end.rawValue) after \(Markup.duration(attempt.endMilliseconds - attempt.startMilliseconds))"
            + (attempt.reason.map { " — \($0)" } ?? "")
    }
}

/// Ticks for an axis of elapsed time: round seconds, minutes or hours, labelled that way.
enum TimeTicks {
    struct Tick { let milliseconds: Double; let label: String }

    static func ticks(upTo end: Double) -> [Tick] {
        let steps: [Double] = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
                               900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000]
        let step = steps.first { end / $0 <= 5 } ?? end / 5
        return stride(from: 0.0, through: end, by: step).map { Tick(milliseconds: $0, label: label($0, step: step)) }
    }

    static func label(_ milliseconds: Double, step: Double) -> String {
        if step < 1_000 { return "\(Int(milliseconds)) ms" }
        if step < 60_000 { return "\(Int(milliseconds / 1_000)) s" }
        if step < 3_600_000 { return "\(Int(milliseconds / 60_000)) min" }
        return "\(Int(milliseconds / 3_600_000)) h"
    }
}
