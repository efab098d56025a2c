@testable import CommandLineKit
import Foundation
import Testing
import TestSupport

/// The manual pages and the bash completion are made from the command table: for the built `adapt`, every
/// command `adapt --help` lists and every option its `--help` lists is in them (so they cannot drift), and the
/// completion offers them when bash asks.
@Suite struct DocumentationTests {
    /// Every command of the built `adapt` with its options, read once (about forty runs of `adapt`).
    static let readTable = Result { try table() }

    /// Every command of the built `adapt` with its options, read from its own `--help` output.
    static func table() throws -> [(path: String, options: [String])] {
        let overview = try Executables.run("adapt", ["--help"]).stdout
        let lines = overview.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: "commands:") else { return [] }
        var commands: [(String, [String])] = []
        for line in lines[(start + 1)...] {
            guard line.hasPrefix("  ") else { break }
            let path = line.dropFirst(2).components(separatedBy: "  ")[0].trimmingCharacters(in: .whitespaces)
            let help = try Executables.run("adapt", path.split(separator: " ").map(String.init) + ["--help"]).stdout
            let options = Self.section("options:", of: help).compactMap { row -> String? in
                let first = row.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
                return first.hasPrefix("--") ? first : nil
            }
            commands.append((path, options))
        }
        return commands
    }

    static func section(_ title: String, of text: String) -> [String] {
        let lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: title) else { return [] }
        return Array(lines[(start + 1)...].prefix { $0.hasPrefix("  ") })
    }

    @Test func manualPagesListEveryCommandAndOption() throws {
        let table = try Self.readTable.get()
        #expect(table.count > 30)
        let directory = TemporaryDirectory()
        let written = try Executables.run("adapt", ["manual", "--out", directory.path])
        #expect(written.status == 0, "\(written.stderr)")
        let overview = try String(contentsOf: directory.file("adapt.1"), encoding: .utf8)
        for (path, options) in table {
            let group = String(path.split(separator: " ")[0])
            let page = try String(contentsOf: directory.file("adapt-\(group).1"), encoding: .utf8)
            let roffPath = path.replacingOccurrences(of: "-", with: "\\-")
            #expect(overview.contains(".B \(roffPath)\n"), "adapt.1 lacks \(path)")
            #expect(page.contains(".SS \"adapt \(roffPath)\""), "adapt-\(group).1 lacks \(path)")
            // The command's own part of its group's page: from its heading to the next one.
            let part = page.components(separatedBy: ".SS \"adapt \(roffPath)\"").dropFirst().first?
                .components(separatedBy: ".SS ").first ?? ""
            for option in options {
                #expect(part.contains(option.replacingOccurrences(of: "-", with: "\\-")), "adapt-\(group).1 lacks \(path) \(option)")
            }
        }
        // Every page is one a group names, and man renders each without a warning.
        let groups = Set(table.map { String($0.path.split(separator: " ")[0]) })
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(files == (["adapt.1"] + groups.map { "adapt-\($0).1" }).sorted())
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") {
            for file in files {
                let rendered = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/groff"),
                                                   ["-man", "-Tutf8", "-ww", "-z", directory.file(file).path])
                #expect(rendered.status == 0 && rendered.stderr.isEmpty, "\(file): \(rendered.stderr)")
            }
        }
    }

    @Test func bashCompletionOffersEveryCommandAndOption() throws {
        let table = try Self.readTable.get()
        let script = try Executables.run("adapt", ["completion", "bash"])
        #expect(script.status == 0)
        let directory = TemporaryDirectory()
        try script.stdout.write(to: directory.file("adapt.bash"), atomically: true, encoding: .utf8)
        // One bash asks for every completion: COMP_WORDS as bash fills them, COMPREPLY printed on one line each.
        var driver = "source \(directory.file("adapt.bash").path)\n"
        driver += "ask() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _adapt; echo \"${COMPREPLY[*]}\"; }\n"
        for (path, _) in table {
            driver += "ask adapt \(path) --\n"
        }
        for (path, _) in table {
            let words = path.split(separator: " ")
            driver += "ask adapt \(words.dropLast().joined(separator: " ")) ''\n"
        }
        try driver.write(to: directory.file("driver.bash"), atomically: true, encoding: .utf8)
        let answers = try Executables.run(executableAt: URL(fileURLWithPath: "/bin/bash"), [directory.file("driver.bash").path])
        #expect(answers.status == 0, "\(answers.stderr)")
        let lines = answers.stdout.components(separatedBy: "\n")
        try #require(lines.count >= 2 * table.count)
        for (index, (path, options)) in table.enumerated() {
            let offered = Set(lines[index].split(separator: " ").map(String.init))
            for option in options + ["--state", "--durability", "--help"] {
                #expect(offered.contains(option), "adapt \(path) --<TAB> does not offer \(option)")
            }
            let nextWords = Set(lines[table.count + index].split(separator: " ").map(String.init))
            let last = String(path.split(separator: " ").last ?? "")
            #expect(nextWords.contains(last), "adapt \(path.split(separator: " ").dropLast().joined(separator: " ")) <TAB> does not offer \(last)")
        }
    }

    @Test func completionOffersAnOptionsChoicesAndSkipsItsValue() throws {
        let tool = CommandLineTool(name: "tool", summary: "", globalOptions: [OptionSpec("durability", value: "full|normal", help: "")],
                                   commands: [Command("data import", summary: "", options: [OptionSpec("lineage", value: "L", help: ""),
                                                                                           OptionSpec.json]) { _ in },
                                              Command("data list", summary: "") { _ in }],
                                   version: "1")
        let directory = TemporaryDirectory()
        try tool.bashCompletion().write(to: directory.file("tool.bash"), atomically: true, encoding: .utf8)
        let driver = """
            source \(directory.file("tool.bash").path)
            ask() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _tool; echo "${COMPREPLY[*]}"; }
            ask tool ''
            ask tool data ''
            ask tool --durability ''
            ask tool --durability full data ''
            ask tool data import --lineage data --j
            ask tool data import --lineage ''
            """
        try driver.write(to: directory.file("driver.bash"), atomically: true, encoding: .utf8)
        let answers = try Executables.run(executableAt: URL(fileURLWithPath: "/bin/bash"), [directory.file("driver.bash").path])
        #expect(answers.stdout.components(separatedBy: "\n").prefix(6) == ["data", "import list", "full normal", "import list", "--json", ""])
    }

    @Test func manualPagesEscapeRoffAndGroupByFirstWord() {
        let tool = CommandLineTool(name: "tool", summary: "does things", globalOptions: [],
                                   commands: [Command("data import", summary: "read a file",
                                                      discussion: ".TH is not a request here\nback\\slash, at least ≥ 1",
                                                      options: [OptionSpec("dry-run", help: "say only")]) { _ in },
                                              Command("data list", summary: "list") { _ in },
                                              Command("gc", summary: "collect") { _ in }])
        let pages = tool.manualPages(date: "2026-01-01", source: "tool 1")
        #expect(pages.map(\.fileName) == ["tool.1", "tool-data.1", "tool-gc.1"])
        let data = pages[1].text
        #expect(data.contains("\\&.TH is not a request here"))
        #expect(data.contains("back\\eslash, at least \\[u2265] 1"))
        #expect(data.contains(".B \\-\\-dry\\-run"))
        #expect(data.contains("tool\\-data \\- the data commands: import, list"))
        #expect(!data.contains("\n.TH is"))
    }

    @Test func versionIsPrintedBeforeAnyCommand() throws {
        let result = try Executables.run("adapt", ["--version"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("adapt ") == true)
        let commit = lines.count > 1 && lines[1].hasPrefix("commit ") ? String(lines[1].dropFirst("commit ".count)) : ""
        // Built from this checkout: a commit of its history (with -dirty when files were changed).
        let hash = String(commit.prefix(40))
        #expect(hash.count == 40 && hash.allSatisfy(\.isHexDigit), "\(commit)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let known = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/git"), ["-C", root.path, "cat-file", "-e", hash + "^{commit}"])
        #expect(known.status == 0, "\(hash) is not a commit of this checkout")
    }

    @Test func commitOfABuildOutsideGitIsUnknown() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let tarball = TemporaryDirectory()  // an unpacked source tarball: no .git, under no repository
        let out = tarball.file("generated")
        let run = try Executables.run(executableAt: URL(fileURLWithPath: "/bin/sh"),
                                      [root.appendingPathComponent("scripts/build-commit.sh").path, tarball.path, out.path])
        #expect(run.status == 0, "\(run.stderr)")
        let text = try String(contentsOf: out.appendingPathComponent("BuildCommit.swift"), encoding: .utf8)
        #expect(text.contains("let buildCommit = \"unknown\""))
        // From the checkout itself: its HEAD.
        let here = try Executables.run(executableAt: URL(fileURLWithPath: "/bin/sh"),
                                       [root.appendingPathComponent("scripts/build-commit.sh").path, root.path, out.path])
        #expect(here.status == 0)
        let head = try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/git"), ["-C", root.path, "rev-parse", "HEAD"])
        let written = try String(contentsOf: out.appendingPathComponent("BuildCommit.swift"), encoding: .utf8)
        #expect(written.contains("let buildCommit = \"\(head.stdout.trimmingCharacters(in: .whitespacesAndNewlines))"))
    }
}
