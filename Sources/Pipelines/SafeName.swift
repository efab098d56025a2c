import AdaptCore

/// Names of lineages and steps: safe in file names, systemd unit names, cron lines and unique keys.
public enum SafeName {
    public static let maximumLength = SafeNameRule.maximumLength

    /// 1–64 ASCII letters, digits, `-` or `_`, starting with a letter or digit (AdaptCore's `SafeNameRule`).
    public static func isValid(_ name: String) -> Bool { SafeNameRule.isValid(name) }

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
