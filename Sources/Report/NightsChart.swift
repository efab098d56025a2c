/// A lineage's nights side by side: the held-out mean NLL of the incumbent (grey) and of the candidate (a dot
/// filled green when promoted, hollow red when refused, a grey cross when the night failed or was cancelled), and
/// the curve of the version active at the end of each night (blue): the candidate's figure on a promoted night, the
/// incumbent's otherwise.
struct NightsChart {
    let nights: [ReportNight]

    static let left = 34.0, right = 350.0, top = 10.0, bottom = 168.0, height = 200.0

    var svg: String {
        let values = nights.flatMap { [$0.candidateMeanNLL, $0.incumbentMeanNLL].compactMap { $0 } }
        let y = ChartScale(values: values, range: (Self.bottom, Self.top))
        let x = ChartScale(domain: -0.5...(Double(max(nights.count, 1)) - 0.5), range: (Self.left, Self.right))
        var out = #"<svg class="chart nights" viewBox="0 0 360 \#(Int(Self.height))" role="img" aria-label="held-out NLL by night">"#
        for tick in y.ticks(4) {
            let ty = y(tick)
            out += #"<line class="grid" x1="\#(Self.left)" x2="\#(Self.right)" y1="\#(Markup.coordinate(ty))" y2="\#(Markup.coordinate(ty))"/>"#
            out += #"<text class="tick-label" text-anchor="end" x="\#(Self.left - 3)" y="\#(Markup.coordinate(ty + 3))">\#(Markup.number(tick))</text>"#
        }
        // One label per night while they fit (about seven across a phone), else every k-th.
        let every = max(1, (nights.count + 6) / 7)
        let incumbent = nights.enumerated().compactMap { index, night in
            night.incumbentMeanNLL.map { "\(Markup.coordinate(x(Double(index)))),\(Markup.coordinate(y($0)))" }
        }
        if incumbent.count > 1 { out += #"<polyline class="incumbent-line" points="\#(incumbent.joined(separator: " "))"/>"# }
        let active = nights.enumerated().compactMap { index, night in
            night.activeMeanNLL.map { "\(Markup.coordinate(x(Double(index)))),\(Markup.coordinate(y($0)))" }
        }
        if active.count > 1 { out += #"<polyline class="active-line" points="\#(active.joined(separator: " "))"/>"# }
        for (index, night) in nights.enumerated() {
            let cx = x(Double(index))
            if index % every == 0 {
                out += #"<text class="tick-label" text-anchor="middle" x="\#(Markup.coordinate(cx))" y="\#(Markup.coordinate(Self.bottom + 12))">\#(Markup.text(String(night.night.suffix(5))))</text>"#
            }
            out += #"<g class="night result-\#(night.result.rawValue)" data-run="\#(Markup.attribute(night.runID))"><title>\#(Markup.text(Self.title(night)))</title>"#
            if let value = night.incumbentMeanNLL {
                out += #"<circle class="incumbent-point" cx="\#(Markup.coordinate(cx))" cy="\#(Markup.coordinate(y(value)))" r="2"/>"#
            }
            if let value = night.activeMeanNLL {
                out += #"<rect class="active-point" x="\#(Markup.coordinate(cx - 2.5))" y="\#(Markup.coordinate(y(value) - 2.5))" width="5" height="5"/>"#
            }
            if let value = night.candidateMeanNLL {
                out += #"<circle class="candidate-point" cx="\#(Markup.coordinate(cx))" cy="\#(Markup.coordinate(y(value)))" r="4"/>"#
            } else {
                let cy = Self.bottom - 6
                out += #"<path class="no-candidate" d="M\#(Markup.coordinate(cx - 4)) \#(Markup.coordinate(cy - 4))l8 8m0 -8l-8 8"/>"#
            }
            out += "</g>"
        }
        out += #"<text class="axis-label" text-anchor="end" x="\#(Self.right)" y="\#(Self.height - 2)">night</text>"#
        return out + "</svg>"
    }

    static func title(_ night: ReportNight) -> String {
        "\(night.night) (\(night.runID)): \(night.result.rawValue)"
            + (night.candidateMeanNLL.map { ", candidate \(Markup.number($0))" } ?? "")
            + (night.incumbentMeanNLL.map { ", incumbent \(Markup.number($0))" } ?? "")
            + (night.activeMeanNLL.map { ", active \(night.activeVersion ?? "base") \(Markup.number($0))" } ?? "")
    }
}
