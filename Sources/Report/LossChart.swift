/// The training loss against the step: the raw loss thin, its moving average thick, a dashed line at each
/// checkpoint and a solid one (with an R) where training resumed from one.
struct LossChart {
    let curve: LossCurve

    static let left = 34.0, right = 352.0, top = 8.0, bottom = 170.0, height = 196.0

    var svg: String {
        let losses = curve.points.flatMap { [$0.loss, $0.smoothed] }
        let x = ChartScale(domain: 0...Double(max(curve.totalSteps, curve.points.last?.step ?? 1, 1)), range: (Self.left, Self.right))
        let y = ChartScale(values: losses, range: (Self.bottom, Self.top))
        var out = #"<svg class="chart losses" viewBox="0 0 360 \#(Int(Self.height))" role="img" aria-label="training loss by step">"#
        for tick in y.ticks(4) {
            let ty = y(tick)
            out += #"<line class="grid" x1="\#(Self.left)" x2="\#(Self.right)" y1="\#(Markup.coordinate(ty))" y2="\#(Markup.coordinate(ty))"/>"#
            out += #"<text class="tick-label" text-anchor="end" x="\#(Self.left - 3)" y="\#(Markup.coordinate(ty + 3))">\#(Markup.number(tick))</text>"#
        }
        for tick in x.ticks(5) {
            let tx = x(tick)
            out += #"<text class="tick-label" text-anchor="middle" x="\#(Markup.coordinate(tx))" y="\#(Markup.coordinate(Self.bottom + 12))">\#(Int(tick))</text>"#
        }
        out += #"<text class="axis-label" text-anchor="end" x="\#(Self.right)" y="\#(Markup.coordinate(Self.height - 2))">step</text>"#
        for mark in curve.checkpoints {
            let tx = Markup.coordinate(x(Double(mark.step)))
            out += #"<line class="checkpoint" x1="\#(tx)" x2="\#(tx)" y1="\#(Self.top)" y2="\#(Self.bottom)"><title>\#(Markup.text("checkpoint \(mark.checkpoint) at step \(mark.step)"))</title></line>"#
        }
        for mark in curve.resumes {
            let tx = Markup.coordinate(x(Double(mark.step)))
            out += #"<g class="resume"><line x1="\#(tx)" x2="\#(tx)" y1="\#(Self.top)" y2="\#(Self.bottom)"/>"#
                + #"<text x="\#(tx)" y="\#(Self.top + 8)">R</text><title>\#(Markup.text("attempt \(mark.attempt) resumed from \(mark.checkpoint) at step \(mark.step)"))</title></g>"#
        }
        func line(_ value: (LossCurve.Point) -> Double) -> String {
            curve.points.map { "\(Markup.coordinate(x(Double($0.step)))),\(Markup.coordinate(y(value($0))))" }.joined(separator: " ")
        }
        out += #"<polyline class="loss-raw" data-points="\#(curve.points.count)" points="\#(line(\.loss))"/>"#
        out += #"<polyline class="loss-smoothed" data-points="\#(curve.points.count)" points="\#(line(\.smoothed))"/>"#
        // A curve of one point (a step that stopped at its first checkpoint) is a dot, not an invisible line.
        if curve.points.count == 1, let point = curve.points.first {
            out += #"<circle class="loss-dot" cx="\#(Markup.coordinate(x(Double(point.step))))" cy="\#(Markup.coordinate(y(point.loss)))" r="2.5"/>"#
        }
        return out + "</svg>"
    }
}
