/// One subcommand: what it is called, what it takes, and what it does.
public struct Command: Sendable {
    public let path: [String]
    public let summary: String
    public let discussion: String?
    public let options: [OptionSpec]
    public let positionals: [PositionalSpec]
    public let run: @Sendable (Invocation) async throws -> Void

    public init(_ path: String, summary: String, discussion: String? = nil, options: [any OptionDeclaration] = [],
                positionals: [PositionalSpec] = [], run: @escaping @Sendable (Invocation) async throws -> Void) {
        self.path = path.split(separator: " ").map(String.init)
        self.summary = summary
        self.discussion = discussion
        self.options = options.map(\.spec)
        self.positionals = positionals
        self.run = run
    }
}

/// What a command's body receives: its own arguments and the global options (`--state`, …).
public struct Invocation: Sendable {
    public let arguments: ParsedArguments
    public let global: ParsedArguments
}

/// A program made of subcommands (`adapt enqueue …`) or of one command (a worker), with `--help` everywhere.
///
/// Global options may appear before or after the subcommand's name. `--` ends the options; an empty
/// argument is a valid value.
public struct CommandLineTool: Sendable {
    public let name: String
    public let summary: String
    public let globalOptions: [OptionSpec]
    public let commands: [Command]
    /// What `--version` before any command prints; nil: the program has no `--version`.
    public let version: String?

    public init(name: String, summary: String, globalOptions: [OptionSpec] = [], commands: [Command],
                version: String? = nil) {
        self.name = name
        self.summary = summary
        self.globalOptions = globalOptions
        self.commands = commands
        self.version = version
    }

    /// Parses and runs; returns the process exit code.
    public func main(_ arguments: [String]) async -> Int32 {
        var commandName: String?
        do {
            let (command, leading, rest) = try resolve(arguments)
            guard let command else { return 0 }  // help was printed
            commandName = command.path.joined(separator: " ")
            let beforeTerminator = rest.prefix { $0 != "--" }
            if beforeTerminator.contains("--help") || beforeTerminator.contains("-h") {
                Console.print(help(for: command))
                return 0
            }
            // Options before the command's name are global even when the command has an option of the same
            // name (`adapt --state DIR jobs --state running`); after it, the command's own option wins.
            let (_, before) = try Self.parse(leading, options: [], global: globalOptions, positionals: [])
            var (parsed, global) = try Self.parse(rest, options: command.options, global: globalOptions,
                                                  positionals: command.positionals)
            global.values.merge(before.values) { after, _ in after }
            global.flags.formUnion(before.flags)
            try await command.run(Invocation(arguments: parsed, global: global))
            return 0
        } catch {
            return ErrorReporter.report(error, tool: name, command: commandName)
        }
    }

    /// Finds the command named by the leading words, skipping global options given before it.
    private func resolve(_ arguments: [String]) throws -> (Command?, [String], [String]) {
        var words: [String] = []
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" {
                // `adapt worker --help` is the command's own help, even when other commands share its prefix.
                if let exact = commands.first(where: { $0.path == words }) {
                    return (exact, leading, Array(arguments[index...]))
                }
                Console.print(overview(prefix: words))
                return (nil, [], [])
            }
            if argument == "--version", words.isEmpty, let version {
                Console.print(version)
                return (nil, [], [])
            }
            if argument.hasPrefix("--") && argument != "--" {
                guard words.isEmpty else { break }
                // A global option before the command name; keep it (and its value) for parsing later.
                let name = String(argument.dropFirst(2).prefix { $0 != "=" })
                guard let spec = globalOptions.first(where: { $0.name == name }) else {
                    throw UsageError("unknown option '\(argument)' before the command")
                }
                leading.append(argument)
                if !spec.isFlag && !argument.contains("=") {
                    guard index + 1 < arguments.count else { throw UsageError("--\(name) needs a value") }
                    leading.append(arguments[index + 1])
                    index += 1
                }
                index += 1
                continue
            }
            let candidate = words + [argument]
            if commands.contains(where: { $0.path.starts(with: candidate) }) {
                words = candidate
                index += 1
                continue
            }
            break
        }
        if let exact = commands.first(where: { $0.path == words }) {
            return (exact, leading, Array(arguments[index...]))
        }
        if words.isEmpty {
            if index < arguments.count { throw UsageError("unknown command '\(arguments[index])'") }
            Console.print(overview(prefix: []))
            throw ExitCode(2)
        }
        let next = index < arguments.count ? " '\(arguments[index])'" : ""
        throw UsageError("'\(words.joined(separator: " "))' needs a subcommand\(next.isEmpty ? "" : ", not\(next)"): "
                         + subcommands(of: words).joined(separator: ", "))
    }

    private func subcommands(of prefix: [String]) -> [String] {
        var seen: [String] = []
        for command in commands where command.path.count > prefix.count && command.path.starts(with: prefix) {
            let word = command.path[prefix.count]
            if !seen.contains(word) { seen.append(word) }
        }
        return seen
    }

    /// Splits `arguments` into the command's options, global options and positionals.
    static func parse(_ arguments: [String], options: [OptionSpec], global: [OptionSpec],
                      positionals: [PositionalSpec]) throws -> (ParsedArguments, ParsedArguments) {
        var parsed = ParsedArguments()
        var globals = ParsedArguments()
        var loose: [String] = []
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("--") || argument.count == 2 && argument != "--" {
                loose.append(argument)
                continue
            }
            if argument == "--" { optionsEnded = true; continue }
            let body = argument.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inline = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            let (spec, isGlobal): (OptionSpec, Bool)
            if let own = options.first(where: { $0.name == name }) {
                (spec, isGlobal) = (own, false)
            } else if let shared = global.first(where: { $0.name == name }) {
                (spec, isGlobal) = (shared, true)
            } else {
                throw UsageError("unknown option '--\(name)'")
            }
            if spec.isFlag {
                if let inline {
                    guard inline == "true" || inline == "false" else {
                        throw UsageError("--\(name) is a flag; it takes no value (or =true/=false), got '\(inline)'")
                    }
                    if inline == "true" { _ = isGlobal ? globals.flags.insert(name) : parsed.flags.insert(name) }
                } else {
                    _ = isGlobal ? globals.flags.insert(name) : parsed.flags.insert(name)
                }
                continue
            }
            let value: String
            if let inline { value = inline } else {
                guard index < arguments.count else { throw UsageError("--\(name) needs a value (\(spec.value ?? "VALUE"))") }
                value = arguments[index]
                index += 1
            }
            if isGlobal {
                globals.values[name] = [value]
            } else if spec.repeats {
                parsed.values[name, default: []].append(value)
            } else {
                if parsed.values[name] != nil { throw UsageError("--\(name) is given twice") }
                parsed.values[name] = [value]
            }
        }
        for spec in positionals {
            if spec.variadic {
                parsed.positionals[spec.name] = loose
                loose = []
            } else if !loose.isEmpty {
                parsed.positionals[spec.name] = [loose.removeFirst()]
            } else if !spec.optional {
                throw UsageError("missing \(spec.name)")
            }
        }
        if let extra = loose.first { throw UsageError("unexpected argument '\(extra)'") }
        return (parsed, globals)
    }

    // MARK: Help

    func help(for command: Command) -> String {
        let words = ([name] + command.path).joined(separator: " ")
        let usage = ([words] + (command.options.isEmpty ? [] : ["[options]"]) + command.positionals.map(\.usage))
            .joined(separator: " ")
        var lines = ["\(command.summary)", "", "usage: \(usage)"]
        if let discussion = command.discussion { lines += ["", discussion] }
        if !command.positionals.isEmpty {
            lines += ["", "arguments:"] + command.positionals.map { Self.row($0.usage, $0.help) }
        }
        lines += ["", "options:"] + command.options.map { Self.row($0.usage, $0.help) }
        lines.append(Self.row("-h, --help", "show this help"))
        if !globalOptions.isEmpty {
            lines += ["", "global options:"] + globalOptions.map { Self.row($0.usage, $0.help) }
        }
        return lines.joined(separator: "\n")
    }

    func overview(prefix: [String]) -> String {
        let shown = commands.filter { $0.path.starts(with: prefix) }
        var lines = prefix.isEmpty ? [summary, "", "usage: \(name)\(globalOptions.isEmpty ? "" : " [global options]") COMMAND …"]
                                   : ["usage: \(([name] + prefix).joined(separator: " ")) SUBCOMMAND …"]
        lines += ["", "commands:"] + shown.map { Self.row($0.path.joined(separator: " "), $0.summary) }
        if !globalOptions.isEmpty {
            lines += ["", "global options:"] + globalOptions.map { Self.row($0.usage, $0.help) }
        }
        if version != nil && prefix.isEmpty { lines.append(Self.row("--version", "print the version and the commit it was built from")) }
        lines += ["", "'\(name) COMMAND --help' describes one command."]
        return lines.joined(separator: "\n")
    }

    static func row(_ left: String, _ right: String) -> String {
        let padded = left.count < 28 ? left + String(repeating: " ", count: 28 - left.count) : left + "  "
        return "  " + padded + right
    }
}
