/// A manual page in roff (man(7) macros): its file name (`adapt-data.1`) and text.
public struct ManualPage: Sendable, Equatable {
    public let fileName: String
    public let text: String
}

/// The manual pages of a program, made from the same declarations as `--help`: one page for the program, listing
/// every command and the global options, and one page per command group (the commands sharing a first word:
/// `adapt-data(1)` holds `data import`, `data list`, …), each with every option and argument.
extension CommandLineTool {
    /// `date` and `source` go into each page's `.TH` line (e.g. "2026-12-01", "adapt 0.1.0").
    public func manualPages(date: String, source: String) -> [ManualPage] {
        [overviewPage(date: date, source: source)]
            + commandGroups.map { groupPage($0.name, $0.commands, date: date, source: source) }
    }

    /// Commands grouped by their first word, in the order of the table.
    public var commandGroups: [(name: String, commands: [Command])] {
        var groups: [(name: String, commands: [Command])] = []
        for command in commands {
            let word = command.path.first ?? ""
            if let index = groups.firstIndex(where: { $0.name == word }) {
                groups[index].commands.append(command)
            } else {
                groups.append((word, [command]))
            }
        }
        return groups
    }

    /// The page name of a group: `adapt-data`.
    public func manualPageName(group: String) -> String { "\(name)-\(group)" }

    private func overviewPage(date: String, source: String) -> ManualPage {
        var roff = Roff()
        roff.header(name, date: date, source: source)
        roff.section("NAME")
        roff.text("\(name) \\- \(Roff.escaped(summary))")
        roff.section("SYNOPSIS")
        roff.line(".B \(Roff.escaped(name))")
        roff.text("[\\fIglobal options\\fR] \\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIarguments\\fR]")
        if version != nil { roff.line(".br"); roff.line(".B \(Roff.escaped(name)) \\-\\-version") }
        roff.section("DESCRIPTION")
        roff.text("Every command has \\fB\\-\\-help\\fR; \\fB\\-\\-\\fR ends the options, and an empty argument is a valid value. "
                  + "Global options may be given before or after the command's name.")
        roff.section("COMMANDS")
        for group in commandGroups {
            for command in group.commands {
                roff.line(".TP")
                roff.line(".B \(Roff.escaped(command.path.joined(separator: " ")))")
                roff.text("\(Roff.escaped(command.summary)) (\\fB\(Roff.escaped(manualPageName(group: group.name)))\\fR(1))")
            }
        }
        roff.section("GLOBAL OPTIONS")
        roff.options(globalOptions)
        if version != nil {
            roff.line(".TP")
            roff.line(".B \\-\\-version")
            roff.text("print the version and the commit it was built from")
        }
        roff.exitStatus()
        roff.section("SEE ALSO")
        roff.text(commandGroups.map { "\\fB\(Roff.escaped(manualPageName(group: $0.name)))\\fR(1)" }.joined(separator: ", "))
        return ManualPage(fileName: "\(name).1", text: roff.text)
    }

    private func groupPage(_ group: String, _ commands: [Command], date: String, source: String) -> ManualPage {
        let page = manualPageName(group: group)
        var roff = Roff()
        roff.header(page, date: date, source: source)
        roff.section("NAME")
        let what = commands.count == 1 ? commands[0].summary
            : "the \(group) commands: " + commands.map { $0.path.dropFirst().joined(separator: " ") }.joined(separator: ", ")
        roff.text("\(Roff.escaped(page)) \\- \(Roff.escaped(what))")
        roff.section("SYNOPSIS")
        for (index, command) in commands.enumerated() {
            if index > 0 { roff.line(".br") }
            roff.line(".B \(Roff.escaped(([name] + command.path).joined(separator: " ")))")
            let rest = (command.options.isEmpty ? [] : ["[\\fIoptions\\fR]"]) + command.positionals.map { "\\fI\(Roff.escaped($0.usage))\\fR" }
            if !rest.isEmpty { roff.text(rest.joined(separator: " ")) }
        }
        roff.section("DESCRIPTION")
        for command in commands {
            roff.line(".SS \"\(Roff.escaped(([name] + command.path).joined(separator: " ")))\"")
            roff.text(Roff.escaped(command.summary) + ".")
            if let discussion = command.discussion {
                roff.line(".PP")
                roff.paragraphs(discussion)
            }
            if !command.positionals.isEmpty {
                roff.line(".PP")
                roff.line("Arguments:")
                for positional in command.positionals {
                    roff.line(".TP")
                    roff.line(".I \(Roff.escaped(positional.usage))")
                    roff.text(Roff.escaped(positional.help))
                }
            }
            roff.line(".PP")
            roff.line("Options:")
            roff.options(command.options)
            roff.line(".TP")
            roff.line(".BR \\-h \", \" \\-\\-help")
            roff.text("show this help")
        }
        roff.section("GLOBAL OPTIONS")
        roff.options(globalOptions)
        roff.exitStatus()
        roff.section("SEE ALSO")
        roff.text("\\fB\(Roff.escaped(name))\\fR(1)")
        return ManualPage(fileName: "\(page).1", text: roff.text)
    }
}

/// Builds roff text. Text from the table is escaped: a backslash would start an escape, a line starting with
/// `.` or `'` would be read as a request, `-` in option names must be `\-` to stay an ASCII hyphen-minus
/// (groff renders a plain `-` as a hyphen, which cannot be copied into a shell), and non-ASCII characters
/// (…, →, ≥) are named by code point.
struct Roff {
    private(set) var text = ""

    static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            // troff reads bytes, not UTF-8 (man-db's preconv aside): other characters go by their code point.
            case _ where scalar.value > 0x7F: out += "\\[u" + hex(scalar.value) + "]"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// At least four upper-case hexadecimal digits, as groff's `\[uXXXX]` wants them.
    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    mutating func line(_ line: String) { text += line + "\n" }

    /// Running text: continuation lines that would start with `.` or `'` are protected with `\&`.
    mutating func text(_ paragraph: String) {
        for line in paragraph.split(separator: "\n", omittingEmptySubsequences: true) {
            let trimmed = line.drop { $0 == " " }
            self.line((trimmed.first == "." || trimmed.first == "'" ? "\\&" : "") + trimmed)
        }
    }

    /// A discussion as written for `--help`: its lines joined, blank lines between paragraphs kept.
    mutating func paragraphs(_ discussion: String) {
        let blocks = discussion.components(separatedBy: "\n\n")
        for (index, block) in blocks.enumerated() {
            if index > 0 { line(".PP") }
            text(Self.escaped(block))
        }
    }

    mutating func header(_ page: String, date: String, source: String) {
        line(".\\\" Generated from the command table by '\(page.split(separator: "-").first ?? "") manual'; do not edit.")
        line(".TH \"\(Self.escaped(page.uppercased()))\" 1 \"\(Self.escaped(date))\" \"\(Self.escaped(source))\" \"User Commands\"")
    }

    mutating func section(_ title: String) { line(".SH \(title)") }

    mutating func options(_ options: [OptionSpec]) {
        for option in options {
            line(".TP")
            if let value = option.value {
                line(".BI \"\\-\\-\(Self.escaped(option.name)) \" \"\(Self.escaped(value))\"")
            } else {
                line(".B \\-\\-\(Self.escaped(option.name))")
            }
            text(Self.escaped(option.help) + (option.repeats ? " (may be given more than once)" : ""))
        }
    }

    mutating func exitStatus() {
        section("EXIT STATUS")
        line(".TP"); line(".B 0"); line("success")
        line(".TP"); line(".B 1"); line("failure (the message on standard error names the problem and the way out)")
        line(".TP"); line(".B 2"); line("usage error: an unknown option, a missing or malformed value")
    }
}
