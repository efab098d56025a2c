import AdaptCore

/// The report as one self-contained HTML document: inline CSS and SVG, no script, no font or image from
/// anywhere, so it opens from a file, on a phone, offline, and prints.
public enum ReportPage {
    public static func html(_ data: ReportData) -> String {
        var body = header(data)
        switch data.subject {
        case .run:
            body += timeline(data.jobs)
            body += losses(data.losses)
            body += gate(data.gate, includesText: data.includesText)
        case .lineage:
            body += nights(data.nights)
        }
        body += chain(data)
        body += registry(data)
        body += "<footer>Made by adapt at \(Markup.text(Timestamp.iso8601(data.generatedAt))) from the job history. "
            + (data.includesText ? "This report holds example text (--include-text): treat it like the examples themselves."
                                  : "It holds counts, times, metrics and digests, no example text.")
            + "</footer>"
        let title = data.subject == .run ? "adapt report: \(data.runs.first?.id ?? "no run")" : "adapt report: lineage \(data.lineage ?? "")"
        return """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
        <title>\(Markup.text(title))</title>
        <style>\(ReportStyle.css)</style>
        </head><body>
        \(body)
        </body></html>

        """
    }

    // MARK: Sections

    static func header(_ data: ReportData) -> String {
        switch data.subject {
        case .run:
            guard let run = data.runs.first else { return "<h1>No run</h1>" }
            let lasted = Markup.duration(run.updatedAt - run.createdAt)
            return "<header><h1>\(Markup.text(run.id)): \(Markup.text(run.name))</h1>"
                + "<p><strong class=\"state-\(Markup.attribute(run.state))\">\(Markup.text(run.state))</strong>; "
                + "\(run.jobsSucceeded) of \(run.jobsTotal) steps succeeded. Created \(Markup.text(Timestamp.iso8601(run.createdAt))), "
                + "last change \(lasted) later\(run.cancelledAt.map { "; cancelled at \(Markup.text(Timestamp.iso8601($0)))" } ?? "").</p></header>"
        case .lineage:
            let promoted = data.nights.filter { $0.result == .promoted }.count
            let refused = data.nights.filter { $0.result == .refused }.count
            let failed = data.nights.filter { $0.result == .failed || $0.result == .cancelled }.count
            return "<header><h1>Lineage \(Markup.text(data.lineage ?? ""))</h1>"
                + "<p>\(data.nights.count) night\(data.nights.count == 1 ? "" : "s"): \(promoted) promoted, \(refused) refused by the gate, "
                + "\(failed) failed or cancelled.</p></header>"
        }
    }

    static func timeline(_ jobs: [ReportJob]) -> String {
        var out = "<section id=\"timeline\"><h2>Timeline</h2>"
        guard !jobs.isEmpty else { return out + "<p class=\"muted\">The run has no jobs.</p></section>" }
        let chart = TimelineChart(jobs: jobs)
        out += chart.svg
        out += "<ul class=\"legend\"><li><span class=\"swatch sw-ok\"></span>succeeded</li><li><span class=\"swatch sw-run\"></span>running</li>"
            + "<li><span class=\"swatch sw-bad\"></span>failed, killed or cancelled</li>"
            + "<li><span class=\"swatch sw-warn\"></span>deferred, yielded, released or rescued</li></ul>"
        let ends = chart.markedEnds
        if ends.isEmpty {
            out += "<p class=\"muted\">Every attempt ended in success (or is still running): no retries, deferrals, kills or rescues.</p>"
        } else {
            out += "<ol class=\"ends\">" + ends.map { job, attempt in
                "<li class=\"end end-\(attempt.end.rawValue)\"><strong>\(Markup.text(job.name)) attempt \(attempt.attempt): \(attempt.end.rawValue)</strong> "
                    + "after \(Markup.duration(attempt.endMilliseconds - attempt.startMilliseconds))"
                    + (attempt.reason.map { ": \(Markup.text($0))" } ?? "") + "</li>"
            }.joined() + "</ol>"
        }
        return out + "</section>"
    }

    static func losses(_ curve: LossCurve?) -> String {
        var out = "<section id=\"losses\"><h2>Training loss</h2>"
        guard let curve, !curve.points.isEmpty else {
            return out + "<p class=\"muted\">The train step has not reported a loss.</p></section>"
        }
        out += LossChart(curve: curve).svg
        out += "<ul class=\"legend\"><li><span class=\"swatch sw-grey\"></span>loss per step</li><li><span class=\"swatch sw-run\"></span>smoothed</li>"
            + "<li>dashed: checkpoint</li><li>R: resumed</li></ul>"
        let first = curve.points[0], last = curve.points[curve.points.count - 1]
        out += "<p>\(curve.points.count) point\(curve.points.count == 1 ? "" : "s") up to step \(last.step) of \(curve.totalSteps); "
            + "loss \(Markup.number(first.loss)) → \(Markup.number(last.loss)) (smoothed \(Markup.number(last.smoothed))). "
            + "\(curve.checkpoints.count) checkpoint\(curve.checkpoints.count == 1 ? "" : "s") written"
            + (curve.resumes.isEmpty ? "; never resumed." : "; resumed \(curve.resumes.map { "at step \($0.step) (attempt \($0.attempt))" }.joined(separator: ", ")).")
            + (curve.source == .progressEvents ? " <span class=\"muted\">The step did not finish: the points are its progress events, one per checkpoint interval.</span>" : "")
            + "</p>"
        return out + "</section>"
    }

    static func gate(_ gate: ReportGate?, includesText: Bool) -> String {
        var out = "<section id=\"gate\"><h2>Held-out evaluation and the gate</h2>"
        guard let gate else { return out + "<p class=\"muted\">The eval step has not finished: no gate decision.</p></section>" }
        out += "<p>\(Markup.text(GateSentence.comparison(gate))) Mean NLL: \(Markup.text(gate.comparedWith == "base" ? "base" : "incumbent")) "
            + "\(Markup.number(gate.incumbentMeanNLL)), candidate \(Markup.number(gate.candidateMeanNLL)).</p>"
        out += "<p>\(Markup.text(GateSentence.test(gate)))</p>"
        out += "<p class=\"outcome outcome-\(Markup.attribute(gate.outcome))\"><strong>\(Markup.text(GateSentence.outcome(gate)))</strong> "
            + "\(Markup.text(GateSentence.decision(gate)))</p>"
        if !gate.examples.isEmpty {
            out += PairedPlot(gate: gate).svg
            out += "<ul class=\"legend\"><li><span class=\"swatch sw-ok\"></span>candidate lower</li><li><span class=\"swatch sw-bad\"></span>candidate higher</li></ul>"
        }
        if includesText, !gate.examples.contains(where: { $0.prompt != nil }) {
            out += "<p class=\"muted\">The held-out examples' text is not shown: the snapshot the eval step scored was erased or has "
                + "expired, or its examples are not the scored ones one for one.</p>"
        }
        if includesText, gate.examples.contains(where: { $0.prompt != nil }) {
            out += "<table class=\"examples\"><thead><tr><th style=\"width:2.5em\">#</th><th style=\"width:4.5em\">before</th>"
                + "<th style=\"width:4.5em\">after</th><th>prompt → completion</th></tr></thead><tbody>"
            for example in gate.examples {
                out += "<tr><td>\(example.index)</td><td>\(Markup.number(example.incumbent))</td><td>\(Markup.number(example.candidate))</td>"
                    + "<td class=\"example-text\">\(Markup.text(example.prompt ?? "")) → \(Markup.text(example.completion ?? ""))</td></tr>"
            }
            out += "</tbody></table>"
        }
        return out + "</section>"
    }

    static func nights(_ nights: [ReportNight]) -> String {
        var out = "<section id=\"nights\"><h2>Nights</h2>"
        guard !nights.isEmpty else { return out + "<p class=\"muted\">The lineage has no nightly runs.</p></section>" }
        out += NightsChart(nights: nights).svg
        out += "<ul class=\"legend\"><li><span class=\"swatch sw-run\"></span>active after the night</li>"
            + "<li><span class=\"swatch sw-grey\"></span>incumbent</li><li><span class=\"swatch sw-ok\"></span>promoted</li>"
            + "<li><span class=\"swatch sw-bad\"></span>refused (hollow)</li><li>× failed or cancelled</li></ul>"
        out += "<table class=\"nights\"><thead><tr><th>night</th><th>run</th><th>result</th><th>incumbent</th><th>candidate</th><th>p</th></tr></thead><tbody>"
        for night in nights.reversed() {
            out += "<tr class=\"result-\(night.result.rawValue)\"><td>\(Markup.text(night.night))</td><td>\(Markup.text(night.runID))</td>"
                + "<td class=\"word\">\(night.result.rawValue)\(night.version.map { " (\(Markup.text($0)))" } ?? "")"
                + (night.startedFrom.map { "<br><span class=\"muted started-from\">from \(Markup.text($0))</span>" } ?? "") + "</td>"
                + "<td>\(Markup.number(night.incumbentMeanNLL))</td><td>\(Markup.number(night.candidateMeanNLL))</td><td>\(Markup.number(night.pValue))</td></tr>"
        }
        return out + "</tbody></table></section>"
    }

    /// The active version's weights parents down to the base model: the nights whose training its weights carry.
    static func chain(_ data: ReportData) -> String {
        guard !data.versions.isEmpty else { return "" }
        var out = "<section id=\"chain\"><h2>Weights chain of the active version</h2>"
        let chain = data.chain
        guard !chain.isEmpty else {
            return out + "<p class=\"muted\">The base model is active: no adapter's weights are served.</p></section>"
        }
        out += "<ol class=\"chain\">"
        for link in chain {
            out += "<li class=\"chain-link\(link.retired ? " retired" : "")\">\(Markup.text(link.version))"
                + (link.heldOutMeanNLL.map { " <span class=\"muted\">\(Markup.number($0))</span>" } ?? "") + "</li>"
        }
        out += "<li class=\"chain-base\">base model</li></ol>"
        out += "<p class=\"muted\">Each version started from the weights of the one after it; the last was trained from zero on the base "
            + "model. Erasing an example any of them trained on retires it and every version before it in this list "
            + "(<code>adapt data forget --retire-adapters</code>).</p>"
        return out + "</section>"
    }

    static func registry(_ data: ReportData) -> String {
        var out = "<section id=\"registry\"><h2>Registry\(data.lineage.map { " of \(Markup.text($0))" } ?? "")</h2>"
        if data.versions.isEmpty {
            out += "<p class=\"muted\">No adapter version is registered for this lineage yet.</p>"
        } else {
            out += "<table class=\"versions\"><thead><tr><th>version</th><th>created</th><th>held-out NLL</th><th>digest</th></tr></thead><tbody>"
            for version in data.versions.reversed() {
                let flags = (version.active ? " <strong>active</strong>" : "") + (version.retired ? " retired" : "")
                out += "<tr class=\"version\"><td>\(Markup.text(version.version))\(flags)</td><td>\(Markup.text(Timestamp.iso8601(version.createdAt)))</td>"
                    + "<td>\(Markup.number(version.heldOutMeanNLL))</td><td><code>\(Markup.text(String(version.digest.prefix(12))))</code></td></tr>"
            }
            out += "</tbody></table>"
        }
        if !data.pointerMoves.isEmpty {
            out += "<table class=\"moves\"><thead><tr><th>when</th><th>active pointer</th><th>why</th></tr></thead><tbody>"
            for move in data.pointerMoves.reversed() {
                out += "<tr class=\"move\"><td>\(Markup.text(Timestamp.iso8601(move.at)))</td>"
                    + "<td>\(Markup.text(move.from ?? "base")) → \(Markup.text(move.to ?? "base"))</td>"
                    + "<td>\(Markup.text(move.reason)) by \(Markup.text(move.actor))</td></tr>"
            }
            out += "</tbody></table>"
        }
        return out + "</section>"
    }
}
