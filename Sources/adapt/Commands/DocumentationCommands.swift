import AdaptCore
import BuildInfo
import CommandLineKit
import Foundation
import Services

/// `adapt completion bash` and `adapt manual`: the shell completion and the manual pages, made from the command
/// table itself (`AdaptTool.tool`), so neither can list a command or option `--help` does not, or miss one.
enum DocumentationCommands {
    static let all: [Command] = [completion, manual]

    static let completion = Command(
        "completion bash", summary: "print the bash completion script",
        discussion: "Installed packages put it in /usr/share/bash-completion/completions/adapt. From a checkout: "
            + "'source <(adapt completion bash)'."
    ) { _ in
        Console.write(AdaptTool.tool.bashCompletion())
    }

    static let out = Option<String?>("out", value: "DIR", help: "the directory to write the pages into (created if missing)")

    static let manual = Command(
        "manual", summary: "write the manual pages: adapt(1) and one page per command group",
        discussion: "The pages' date is SOURCE_DATE_EPOCH's when it is set (reproducible builds), else today's (UTC).",
        options: [out]
    ) { invocation in
        let directory = URL(fileURLWithPath: try invocation.arguments.required(out))
        var date = Date()
        if let epoch = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"], !epoch.isEmpty {
            guard let seconds = Double(epoch) else { throw UsageError("SOURCE_DATE_EPOCH must be seconds since the epoch, got '\(epoch)'") }
            date = Date(timeIntervalSince1970: seconds)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        let pages = AdaptTool.tool.manualPages(date: formatter.string(from: date), source: "adapt \(BuildInfo.version)")
        // Only manual pages are replaced: a page's name that holds another file (or a link) is refused first.
        try OutputPath.checkDirectory(directory, option: "out", files: pages.map { ($0.fileName, OutputKind.manualPage) },
                                      state: try GlobalOptions.hostState(invocation), inputs: [])
        do {
            try PrivateFiles.createDirectory(directory)
            for page in pages {
                try AtomicFile.write(Data(page.text.utf8), to: directory.appendingPathComponent(page.fileName))
            }
        } catch {
            throw ManualWriteError(directory: directory.path, reason: (error as NSError).localizedDescription)
        }
        Console.print("wrote \(pages.count) manual pages to " + TerminalText.escaped(directory.path))
    }

    struct ManualWriteError: Error, CustomStringConvertible {
        let directory: String
        let reason: String
        var description: String { "cannot write the manual pages into \(directory): \(reason); choose a writable --out directory" }
    }
}
