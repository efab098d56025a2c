/// Each held-out example's mean token NLL under the incumbent (left) and the candidate (right), joined by a
/// line that is green where the candidate is lower and red where it is higher.
struct PairedPlot {
    let gate: ReportGate

    static let left = 70.0, right = 290.0, top = 12.0, bottom = 200.0, height = 226.0

    var svg: String {
        let values = gate.examples.flatMap { [$0.incumbent, $0.candidate] }
        let y = ChartScale(values: values, range: (Self.bottom, Self.top))
        var out = #"<svg class="chart pairs" viewBox="0 0 360 \#(Int(Self.height))" role="img" aria-label="held-out NLL per example, incumbent and candidate">"#
        for tick in y.ticks(5) {
            let ty = y(tick)
            out += #"<line class="grid" x1="\#(Self.left)" x2="\#(Self.right)" y1="\#(Markup.coordinate(ty))" y2="\#(Markup.coordinate(ty))"/>"#
            out += #"<text class="tick-label" text-anchor="end" x="\#(Self.left - 4)" y="\#(Markup.coordinate(ty + 3))">\#(Markup.number(tick))</text>"#
        }
        out += #"<text class="axis-label" text-anchor="middle" x="\#(Self.left)" y="\#(Self.height - 4)">\#(Markup.text(gate.comparedWith == "base" ? "base model" : gate.comparedWith))</text>"#
        out += #"<text class="axis-label" text-anchor="middle" x="\#(Self.right)" y="\#(Self.height - 4)">candidate</text>"#
        for example in gate.examples {
            let y0 = Markup.coordinate(y(example.incumbent)), y1 = Markup.coordinate(y(example.candidate))
            let direction = example.candidate < example.incumbent ? "lower" : example.candidate > example.incumbent ? "higher" : "equal"
            out += #"<g class="pair \#(direction)" data-example="\#(example.index)"><title>\#(Markup.text("example \(example.index): \(Markup.number(example.incumbent)) → \(Markup.number(example.candidate))"))</title>"#
                + #"<line x1="\#(Self.left)" x2="\#(Self.right)" y1="\#(y0)" y2="\#(y1)"/>"#
                + #"<circle class="pair-point incumbent" cx="\#(Self.left)" cy="\#(y0)" r="2.5"/>"#
                + #"<circle class="pair-point candidate" cx="\#(Self.right)" cy="\#(y1)" r="2.5"/></g>"#
        }
        return out + "</svg>"
    }
}
