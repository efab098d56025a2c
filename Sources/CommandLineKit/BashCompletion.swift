/// A bash completion script for a program, made from the same declarations as `--help`: command words after
/// the program's name, each command's options (and the global ones) after `-`, and for an option's value the
/// choices its placeholder lists (`full|normal`), file names for `FILE`/`PATH`/`OUT` and directories for `DIR`.
extension CommandLineTool {
    public func bashCompletion() -> String {
        let function = "_" + name.map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
        var lines = [
            "# bash completion for \(name); generated from its command table by '\(name) completion bash'. Do not edit.",
            "",
            "# The words that may follow a command prefix (\"\" is the program itself).",
            "\(function)_next() {",
            "    case \"$1\" in",
        ]
        var prefixes: [[String]] = [[]]
        for command in commands {
            for length in 1..<command.path.count where !prefixes.contains(Array(command.path.prefix(length))) {
                prefixes.append(Array(command.path.prefix(length)))
            }
        }
        for prefix in prefixes {
            lines.append("        \(Self.shellWord(prefix.joined(separator: " ")))) echo \(Self.shellWord(nextWords(after: prefix).joined(separator: " "))) ;;")
        }
        lines += ["    esac", "}", "", "# The options of a whole command.", "\(function)_options() {", "    case \"$1\" in"]
        for command in commands {
            let names = (command.options.map { "--\($0.name)" } + ["--help"]).joined(separator: " ")
            lines.append("        \(Self.shellWord(command.path.joined(separator: " ")))) echo \(Self.shellWord(names)) ;;")
        }
        lines += ["    esac", "}", "",
                  "# What the value of an option is: a list of words, 'file', 'dir', or nothing to offer; 'flag' takes none.",
                  "\(function)_value() {", "    case \"$1 $2\" in"]
        let global = globalOptions.map { Self.valueCase(prefix: "*", $0) }
        for command in commands {
            for option in command.options {
                lines.append("        " + Self.valueCase(prefix: Self.shellPattern(command.path.joined(separator: " ")), option))
            }
        }
        lines += global.map { "        " + $0 }
        lines.append("        *\" --help\") echo flag ;;")
        if version != nil { lines.append("        *\" --version\") echo flag ;;") }
        lines += ["        *) echo none ;;", "    esac", "}", ""]
        let globalNames = (globalOptions.map { "--\($0.name)" } + ["--help"] + (version == nil ? [] : ["--version"]))
            .joined(separator: " ")
        lines += [
            "\(function)() {",
            "    local cur=${COMP_WORDS[COMP_CWORD]} path=\"\" word kind i=1",
            "    COMPREPLY=()",
            "    # Walk the words before the cursor: command words extend the path, an option that takes a value",
            "    # skips it, anything else is a positional argument.",
            "    while [ $i -lt $COMP_CWORD ]; do",
            "        word=${COMP_WORDS[i]}",
            "        case $word in",
            "            --) return 0 ;;",
            "            --*=*) ;;",
            "            --*)",
            "                kind=$(\(function)_value \"$path\" \"$word\")",
            "                if [ \"$kind\" != flag ]; then i=$((i + 1)); fi ;;",
            "            *)",
            "                if [[ \" $(\(function)_next \"$path\") \" == *\" $word \"* ]]; then path=\"${path:+$path }$word\"; fi ;;",
            "        esac",
            "        i=$((i + 1))",
            "    done",
            "    local prev=${COMP_WORDS[COMP_CWORD-1]}",
            "    if [ $COMP_CWORD -gt 1 ] && [[ $prev == --* ]] && [[ $prev != *=* ]]; then",
            "        kind=$(\(function)_value \"$path\" \"$prev\")",
            "        case $kind in",
            "            flag) ;;",
            "            file) COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;",
            "            dir) COMPREPLY=($(compgen -d -- \"$cur\")); return 0 ;;",
            "            none) return 0 ;;",
            "            *) COMPREPLY=($(compgen -W \"$kind\" -- \"$cur\")); return 0 ;;",
            "        esac",
            "    fi",
            "    if [[ $cur == -* ]]; then",
            "        COMPREPLY=($(compgen -W \"$(\(function)_options \"$path\") \(globalNames)\" -- \"$cur\"))",
            "        return 0",
            "    fi",
            "    local next",
            "    next=$(\(function)_next \"$path\")",
            "    if [ -n \"$next\" ]; then",
            "        COMPREPLY=($(compgen -W \"$next\" -- \"$cur\"))",
            "    else",
            "        COMPREPLY=($(compgen -f -- \"$cur\"))",
            "    fi",
            "}",
            "complete -o filenames -F \(function) \(name)",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// The distinct words that follow `prefix` in the command paths.
    private func nextWords(after prefix: [String]) -> [String] {
        var words: [String] = []
        for command in commands where command.path.count > prefix.count && command.path.starts(with: prefix) {
            let word = command.path[prefix.count]
            if !words.contains(word) { words.append(word) }
        }
        return words
    }

    /// One `case` arm of the value function: what follows `--option` in the command matching `prefix`.
    private static func valueCase(prefix: String, _ option: OptionSpec) -> String {
        let kind: String
        if let value = option.value {
            if value.contains("|") {
                kind = value.split(separator: "|").joined(separator: " ")
            } else if value == "DIR" || value.hasSuffix("DIR") {
                kind = "dir"
            } else if ["FILE", "PATH", "OUT", "BUNDLE"].contains(where: { value.hasSuffix($0) }) {
                kind = "file"
            } else {
                kind = "none"
            }
        } else {
            kind = "flag"
        }
        return "\(prefix)\" \"\(shellPattern("--" + option.name))) echo \(shellWord(kind)) ;;"
    }

    /// A single-quoted shell word.
    static func shellWord(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// A literal inside a `case` pattern (quoted, so `*` and `?` in it match themselves).
    private static func shellPattern(_ text: String) -> String { shellWord(text) }
}
