/// The page's only style sheet, inline: system fonts, a single column that fits a phone, charts that scale with
/// it, and print rules that keep a chart on one page.
enum ReportStyle {
    static let css = """
    :root{color-scheme:light;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--muted:#57606a;--line:#d0d7de;--accent:#0969da}
    *{box-sizing:border-box}
    body{margin:0 auto;padding:12px;max-width:780px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;background:#fff;overflow-wrap:anywhere}
    h1{font-size:1.3em;margin:.2em 0}
    h2{font-size:1.1em;margin:1.4em 0 .4em;border-bottom:1px solid var(--line);padding-bottom:.2em}
    p{margin:.4em 0}
    .muted{color:var(--muted)}
    .state-succeeded,.result-promoted .word{color:var(--ok)}
    .state-failed,.state-cancelled{color:var(--bad)}
    .chart{display:block;width:100%;height:auto;max-width:720px;margin:.4em 0}
    .chart text{font-size:9px;fill:#1f2328;font-family:system-ui,sans-serif}
    .chart .tick-label,.chart .axis-label{fill:var(--muted)}
    .chart .lane-label{font-size:9.5px}
    .chart .grid,.chart .lane{stroke:#eaeef2;stroke-width:1}
    .chart .axis,.chart .tick{stroke:var(--muted);stroke-width:.8}
    .bar{fill:var(--muted)}
    .bar.end-succeeded{fill:var(--ok)}
    .bar.end-running{fill:var(--accent)}
    .bar.end-retried,.bar.end-discarded,.bar.end-killed,.bar.end-cancelled{fill:var(--bad)}
    .bar.end-deferred,.bar.end-yielded,.bar.end-released,.bar.end-rescued{fill:var(--warn)}
    .mark circle{fill:#fff;stroke:var(--bad);stroke-width:1.2}
    .mark.end-deferred circle,.mark.end-yielded circle,.mark.end-released circle,.mark.end-rescued circle{stroke:var(--warn)}
    .mark text{font-size:7px;text-anchor:middle;font-weight:600}
    .loss-raw{fill:none;stroke:#8c959f;stroke-width:.8}
    .loss-smoothed{fill:none;stroke:var(--accent);stroke-width:2}
    .loss-dot{fill:var(--accent)}
    .checkpoint{stroke:#8c959f;stroke-width:.8;stroke-dasharray:3 3}
    .resume line{stroke:var(--warn);stroke-width:1.5}
    .resume text{fill:var(--warn);font-weight:700;text-anchor:middle}
    .pair line{stroke-width:1;stroke:#8c959f}
    .pair.lower line{stroke:var(--ok)}
    .pair.higher line{stroke:var(--bad)}
    .pair-point{fill:#1f2328}
    .incumbent-line{fill:none;stroke:#8c959f;stroke-width:1}
    .incumbent-point{fill:#8c959f}
    .active-line{fill:none;stroke:var(--accent);stroke-width:1.6}
    .active-point{fill:var(--accent)}
    ol.chain{display:flex;flex-wrap:wrap;gap:.2em .4em;padding:0;margin:.4em 0;list-style:none;font-size:.9em}
    ol.chain li+li::before{content:"← ";color:var(--muted)}
    .chain-link.retired{color:var(--bad)}
    .night .candidate-point{fill:#fff;stroke:var(--muted);stroke-width:1.5}
    .result-promoted .candidate-point{fill:var(--ok);stroke:var(--ok)}
    .result-refused .candidate-point{fill:#fff;stroke:var(--bad)}
    .no-candidate{stroke:var(--muted);stroke-width:1.5}
    .legend{display:flex;flex-wrap:wrap;gap:.3em .9em;font-size:.85em;color:var(--muted);margin:.2em 0;padding:0;list-style:none}
    .legend .swatch{display:inline-block;width:.9em;height:.6em;margin-right:.3em;border-radius:2px;vertical-align:middle}
    .sw-ok{background:var(--ok)}.sw-bad{background:var(--bad)}.sw-warn{background:var(--warn)}.sw-run{background:var(--accent)}.sw-grey{background:#8c959f}
    table{width:100%;border-collapse:collapse;table-layout:fixed;font-size:.88em;margin:.4em 0}
    th,td{text-align:left;padding:.25em .35em;border-bottom:1px solid #eaeef2;vertical-align:top;overflow-wrap:anywhere}
    th{color:var(--muted);font-weight:600}
    ol.ends{padding-left:1.4em;font-size:.9em}
    code{font-size:.9em}
    .example-text{white-space:pre-wrap}
    footer{margin-top:2em;font-size:.8em;color:var(--muted)}
    @media print{body{max-width:none;font-size:11pt}.chart{max-width:16cm;break-inside:avoid}section{break-inside:avoid-page}a{color:inherit}}
    """
}
