/// Names of lineages and steps: safe in file names, systemd unit names, cron lines and unique keys.
public enum SafeName {
    public static let maximumLength = 64

    /// 1–64 ASCII letters, digits, `-` or `_`, starting with a letter or digit.
    public static func isValid(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= maximumLength else { return false }
        func allowed(_ c: Unicode.Scalar) -> Bool {
            ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "-" || c == "_"
        }
        return allowed(first) && first != "-" && first != "_" && name.unicodeScalars.allSatisfy(allowed)
    }

    /// Throws `PipelineError.invalidLineage` unless `name` is valid.
    public static func validate(_ name: String) throws {
        guard isValid(name) else { throw PipelineError.invalidLineage(name) }
    }

    /// At most 40 characters of `text` for a message, with control characters made visible.
    static func abbreviated(_ text: String) -> String {
        let visible = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return visible.count > 40 ? String(visible.prefix(40)) + "…" : visible
    }
}
