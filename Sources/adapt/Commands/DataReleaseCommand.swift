import AdaptCore
import CommandLineKit
import Services

/// `adapt data release`: lets a quarantined source's examples back into training.
extension DataCommands {
    static let release = Command(
        "data release", summary: "let a quarantined source's examples be trained on again",
        discussion: """
            A pipeline with eval.on_worse = quarantine keeps the training examples of the sources a worse night blamed
            out of every later night's sample (the eval step's 'attribution' in 'adapt show JOB' names them and says
            what each did to held-out NLL; 'adapt data stats' counts them). Release a source when you judge its
            examples good after all, or erase them with 'adapt data forget --source S --lineage L'.
            Releasing a source with nothing quarantined releases 0 and succeeds.
            """,
        options: [lineage, releasedSource, .json]
    ) { invocation in
        let args = invocation.arguments
        let lineage = try args.required(lineage)
        let source = try args.required(releasedSource)
        _ = try Lineage.option(lineage)  // a bad name is a usage error (2) even where there is no state
        let store = try existingStore(invocation)
        let result = try asUsage { try store.release(lineage: lineage, source: source) }
        if args[.json] {
            Console.print(JSON.pretty(JSONValue.object([
                "lineage": .string(result.lineage), "source": .string(result.source), "released": .int(result.released),
                "examples": .int(result.examples),
            ])))
            return
        }
        Console.print("released \(result.released) example\(result.released == 1 ? "" : "s") of \(result.examples) in \(lineage)"
                      + (result.released == 0 ? " (none was quarantined)" : "; later nights may sample them again"))
    }

    static let releasedSource = Option<String?>("source", value: "S", help: "the source to release, as the attribution names it")
}
