/// The name of a lineage: one user's (or one use's) line of adapters, examples and nightly runs.
///
/// A lineage name ends up in file names, systemd unit names, cron lines and unique keys, so it is checked
/// once, where it enters (a command-line option, a pipeline file), and carried as this type from there. The
/// replay buffer, the pipeline layer and the commands share this one rule: a lineage `data import` accepts is
/// one `enqueue nightly` and `schedule` accept. Pipeline and step names follow the same rule for the same
/// reasons (they go into the same unit names and keys).
public struct Lineage: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let name: String

    /// The rule, as error messages and help state it.
    public static let rule = "1 to \(maximumLength) letters, digits, '-' or '_', starting with a letter or digit"
    public static let maximumLength = 64

    /// Throws `InvalidLineageName` unless `name` follows `rule`.
    public init(validating name: String) throws(InvalidLineageName) {
        guard Self.isValid(name) else { throw InvalidLineageName(name: name) }
        self.name = name
    }

    public init?(_ name: String) {
        guard Self.isValid(name) else { return nil }
        self.name = name
    }

    /// 1–64 ASCII letters, digits, `-` or `_`, starting with a letter or digit.
    public static func isValid(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= maximumLength else { return false }
        func allowed(_ c: Unicode.Scalar) -> Bool {
            ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "-" || c == "_"
        }
        return allowed(first) && first != "-" && first != "_" && name.unicodeScalars.allSatisfy(allowed)
    }

    public var description: String { name }
    public static func < (a: Lineage, b: Lineage) -> Bool { a.name < b.name }
}

/// A name that breaks `Lineage.rule`. The one message every module and command gives for it.
public struct InvalidLineageName: Error, Equatable, CustomStringConvertible {
    public let name: String

    public init(name: String) { self.name = name }

    public var description: String {
        "lineage '\(Self.shown(name))' is not a valid name; use \(Lineage.rule)"
    }

    /// At most 64 characters of the refused name, with control characters made visible.
    static func shown(_ text: String) -> String {
        let visible = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return visible.count > Lineage.maximumLength ? String(visible.prefix(Lineage.maximumLength)) + "…" : visible
    }
}
