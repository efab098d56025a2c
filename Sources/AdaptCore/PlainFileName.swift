/// A file name read from a file someone else wrote (a run bundle's base model): one component to look up in a
/// directory, never a path that leads out of it.
public enum PlainFileName {
    /// What Linux file systems allow in one component.
    public static let maximumBytes = 255

    /// Why `name` is not a plain file name, or nil when it is: empty, too long, holding '/' or a control
    /// character (NUL included), or starting with '.' (which also covers '.' and '..').
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.utf8.count > maximumBytes { return "is longer than \(maximumBytes) bytes" }
        if name.contains("/") { return "contains '/'" }
        if name.hasPrefix(".") { return "starts with '.'" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            return "contains a control character"
        }
        return nil
    }
}
