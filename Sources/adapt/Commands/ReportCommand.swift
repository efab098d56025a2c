import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt report`: a run's (or a lineage's) history as one self-contained HTML page, or its data as JSON.
enum ReportCommand {
    static let all: [Command] = [report]

    static let report = Command(
        "report", summary: "write a run's or a lineage's report: one self-contained HTML page (timeline, losses, gate, registry)",
        discussion: """
            RUN (default: the newest run) gets its timeline (each job's attempts as bars, with retries, deferrals,
            kills and rescues marked and their reasons), its training loss curve (raw and smoothed, checkpoints and
            resumes marked), the held-out NLL of every example under the incumbent and the candidate with the gate's
            test and outcome in words, and its lineage's registry history. --lineage L puts the lineage's nights side
            by side instead. The page has inline CSS and SVG only (no script, nothing fetched), fits a phone and
            prints. Without --out it goes to stdout. It holds no example text unless --include-text is given.
            --json prints the data the page is drawn from: {subject, lineage, generated_at, includes_text, runs,
            jobs, losses (each point's raw loss), training (their steps, the smoothed losses, checkpoints, resumes), gate,
            versions, pointer_moves, nights} (with --out the page is written as well). With --database postgres://… (or
            ADAPT_DATABASE) the history, the registry and the snapshot blobs are read from that database.
            """,
        options: [lineage, out, includeText, .json],
        positionals: [PositionalSpec("RUN", optional: true, help: "run id (run-N or N); default: the newest run")]
    ) { invocation in
        let a = invocation.arguments
        let lineage = try a[ReportCommand.lineage]
        let subject: ReportService.Subject
        switch (a.string("RUN"), lineage) {
        case (.some, .some): throw UsageError("give either RUN or --lineage L, not both")
        case let (.some(text), nil): subject = .run(try JobCommands.runID(text, option: "RUN"))
        case let (nil, .some(lineage)):
            if a[ReportCommand.includeText] { throw UsageError("--include-text applies to a run's report; a lineage's report shows no examples") }
            subject = .lineage(lineage)
        case (nil, nil): subject = .run(nil)
        }
        let outURL = try a[ReportCommand.out].map { URL(fileURLWithPath: $0) }
        if let outURL { try OutputPath.check(outURL, option: "out", kind: .htmlPage, state: try GlobalOptions.hostState(invocation), inputs: []) }
        let data = try ReportService.gather(subject, from: try GlobalOptions.recordedRuns(invocation),
                                            includeText: a[ReportCommand.includeText])
        if let outURL { try ReportService.write(ReportService.html(data), to: outURL) }
        if a[.json] {
            Console.print(JSON.pretty(data))
        } else if let outURL {
            Console.error("wrote " + TerminalText.escaped(outURL.path))
        } else {
            Console.print(ReportService.html(data))
        }
    }

    static let lineage = Option(lineage: "report on this lineage's nights instead of one run")
    static let out = Option<String?>("out", value: "FILE.html", default: nil, help: "write the page here (mode 0600) instead of stdout") { text in
        guard !text.isEmpty else { throw UsageError("must name a file") }
        return text
    }
    static let includeText = Flag("include-text", help: "show the held-out examples' text beside their scores (it is the user's text)")
}
