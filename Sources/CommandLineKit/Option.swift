/// Anything a command lists among its options: a typed `Option`, a `Flag`, or a plain `OptionSpec`.
public protocol OptionDeclaration: Sendable {
    var spec: OptionSpec { get }
}

extension OptionSpec: OptionDeclaration {
    public var spec: OptionSpec { self }
}

/// An option declared once with its name, value type, default and help: the parser, `--help` and the
/// command's body all read this one value (`try arguments[Self.top]`), so the default a command applies is
/// the default its help shows.
///
/// `Value` is the type the body receives. With a default, it is the plain type (`Option<Int>`); without one it
/// is optional (`Option<String?>`) and the body decides what absence means.
public struct Option<Value: Sendable>: OptionDeclaration {
    public let name: String
    public let placeholder: String
    public let help: String
    public let defaultValue: Value
    /// The default as help shows it (`10`, `./state`); nil shows none (the help text says it in words).
    public let defaultHelp: String?
    public let repeats: Bool
    let parse: @Sendable (String) throws -> Value

    /// `parse` turns the text into a value. A `UsageError` it throws continues a sentence that starts with
    /// the option (`--top` + ` must be between 1 and 100, got 0`); any other error is a sentence of its own
    /// and follows `--top: `. Either way the message names the option, and the error is a usage error.
    public init(_ name: String, value placeholder: String, default defaultValue: Value, defaultHelp: String? = nil,
                repeats: Bool = false, help: String, parse: @escaping @Sendable (String) throws -> Value) {
        self.name = name
        self.placeholder = placeholder
        self.help = help
        self.defaultValue = defaultValue
        self.defaultHelp = defaultHelp
        self.repeats = repeats
        self.parse = parse
    }

    public var spec: OptionSpec {
        OptionSpec(name, value: placeholder, repeats: repeats, help: defaultHelp.map { "\(help) (default \($0))" } ?? help)
    }

    /// The value of `text` given for this option; usage errors name the option.
    public func value(of text: String) throws -> Value {
        do { return try parse(text) } catch let error as UsageError {
            throw UsageError("--\(name) \(error.message)")
        } catch let error as CustomStringConvertible {
            throw UsageError("--\(name): \(error.description)")
        }
    }
}

/// A flag (`--json`, `--dry-run`): present or not.
public struct Flag: OptionDeclaration {
    public let name: String
    public let help: String

    public init(_ name: String, help: String) {
        self.name = name
        self.help = help
    }

    public var spec: OptionSpec { .flag(name, help: help) }
}

extension OptionDeclaration where Self == Flag {
    /// `--json`: one JSON document on stdout (DESIGN.md's table says which).
    public static var json: Flag { Flag("json", help: OptionSpec.json.help) }
    public static func flag(_ name: String, help: String) -> Flag { Flag(name, help: help) }
}

// MARK: Values of the common types

extension Option where Value == String {
    public init(_ name: String, value placeholder: String, default defaultValue: String, help: String) {
        self.init(name, value: placeholder, default: defaultValue, defaultHelp: defaultValue, help: help) { $0 }
    }
}

extension Option where Value == String? {
    public init(_ name: String, value placeholder: String, help: String) {
        self.init(name, value: placeholder, default: nil, help: help) { $0 }
    }
}

extension Option where Value == Int {
    public init(_ name: String, value placeholder: String = "N", default defaultValue: Int, in range: ClosedRange<Int>? = nil,
                help: String) {
        self.init(name, value: placeholder, default: defaultValue, defaultHelp: String(defaultValue), help: help) {
            try OptionParsing.int($0, in: range)
        }
    }
}

extension Option where Value == Int? {
    public init(_ name: String, value placeholder: String = "N", in range: ClosedRange<Int>? = nil, help: String) {
        self.init(name, value: placeholder, default: nil, help: help) { try OptionParsing.int($0, in: range) }
    }
}

extension Option where Value == Double {
    public init(_ name: String, value placeholder: String, default defaultValue: Double, in range: ClosedRange<Double>? = nil,
                help: String) {
        self.init(name, value: placeholder, default: defaultValue, defaultHelp: "\(defaultValue)", help: help) {
            try OptionParsing.double($0, in: range)
        }
    }
}

extension Option where Value == Double? {
    public init(_ name: String, value placeholder: String, in range: ClosedRange<Double>? = nil, help: String) {
        self.init(name, value: placeholder, default: nil, help: help) { try OptionParsing.double($0, in: range) }
    }
}

extension Option where Value: RawRepresentable & CaseIterable, Value.RawValue == String {
    /// One of the enumeration's raw values (`--alternative less|greater|two-sided`).
    public init(_ name: String, default defaultValue: Value, help: String) {
        let words = Value.allCases.map(\.rawValue)
        self.init(name, value: words.joined(separator: "|"), default: defaultValue, defaultHelp: defaultValue.rawValue,
                  help: help) { text in
            guard let value = Value(rawValue: text) else {
                throw UsageError("must be one of \(words.joined(separator: ", ")), got '\(text)'")
            }
            return value
        }
    }
}

/// The parsing rules shared by the typed options and `ParsedArguments`' accessors, for options that parse
/// their own values. Errors continue a sentence that starts with the option's name.
public enum OptionParsing {
    /// A finite decimal number.
    public static func number(_ text: String) throws -> Double { try double(text, in: nil) }

    /// A whole number.
    public static func integer(_ text: String) throws -> Int { try int(text, in: nil) }

    static func int(_ text: String, in range: ClosedRange<Int>?) throws -> Int {
        guard let value = Int(text) else { throw UsageError("expects an integer, got '\(text)'") }
        if let range, !range.contains(value) {
            throw UsageError("must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
        return value
    }

    static func double(_ text: String, in range: ClosedRange<Double>?) throws -> Double {
        guard let value = Double(text), value.isFinite else { throw UsageError("expects a number, got '\(text)'") }
        if let range, !range.contains(value) {
            throw UsageError("must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
        return value
    }
}

extension ParsedArguments {
    /// The option's value when given, else its default.
    public subscript<Value>(_ option: Option<Value>) -> Value {
        get throws {
            guard let text = values[option.name]?.last else { return option.defaultValue }
            return try option.value(of: text)
        }
    }

    /// Every value of a repeating option, in the order given.
    public func all<Value>(_ option: Option<Value>) throws -> [Value] {
        try (values[option.name] ?? []).map(option.value(of:))
    }

    /// The value of an option without a default, which this command needs.
    public func required<Value>(_ option: Option<Value?>) throws -> Value {
        guard let text = values[option.name]?.last, let value = try option.value(of: text) else {
            throw UsageError("missing --\(option.name)")
        }
        return value
    }

    /// Whether the option was given at all (a default may equal a given value).
    public func given<Value>(_ option: Option<Value>) -> Bool { values[option.name] != nil }

    public subscript(_ flag: Flag) -> Bool { flags.contains(flag.name) }
}
