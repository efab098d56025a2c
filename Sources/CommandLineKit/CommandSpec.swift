/// A named option: `--name VALUE` (or `--name=VALUE`), or a flag `--name` when `value` is nil.
public struct OptionSpec: Sendable {
    public let name: String
    /// The placeholder shown in help (`FILE`, `N`); nil makes the option a flag.
    public let value: String?
    public let help: String
    /// May be given more than once; every value is kept.
    public let repeats: Bool

    public init(_ name: String, value: String? = nil, repeats: Bool = false, help: String) {
        self.name = name
        self.value = value
        self.repeats = repeats
        self.help = help
    }

    public static func flag(_ name: String, help: String) -> OptionSpec { OptionSpec(name, help: help) }
    public static let json = OptionSpec.flag("json", help: "print one JSON document on stdout")

    var isFlag: Bool { value == nil }
    var usage: String { value.map { "--\(name) \($0)" } ?? "--\(name)" }
}

/// A positional argument.
public struct PositionalSpec: Sendable {
    public let name: String
    public let help: String
    public let optional: Bool
    /// Takes every remaining positional argument.
    public let variadic: Bool

    public init(_ name: String, optional: Bool = false, variadic: Bool = false, help: String) {
        self.name = name
        self.help = help
        self.optional = optional
        self.variadic = variadic
    }

    var usage: String {
        let core = variadic ? "\(name)…" : name
        return optional ? "[\(core)]" : core
    }
}

/// The parsed arguments of one invocation, read by name with typed accessors that throw usage errors.
public struct ParsedArguments: Sendable {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String: [String]] = [:]

    public init() {}

    public func flag(_ name: String) -> Bool { flags.contains(name) }

    public func string(_ name: String) -> String? { values[name]?.last ?? positionals[name]?.first }

    /// Every value of a repeating option or a variadic positional.
    public func strings(_ name: String) -> [String] { values[name] ?? positionals[name] ?? [] }

    public func has(_ name: String) -> Bool { string(name) != nil || flag(name) }

    public func required(_ name: String) throws -> String {
        guard let value = string(name) else { throw UsageError("missing --\(name)") }
        return value
    }

    public func int(_ name: String) throws -> Int? {
        guard let text = string(name) else { return nil }
        do { return try OptionParsing.int(text, in: nil) } catch let error as UsageError { throw UsageError("--\(name) \(error)") }
    }

    public func int(_ name: String, default fallback: Int, in range: ClosedRange<Int>? = nil) throws -> Int {
        let value = try int(name) ?? fallback
        if let range, !range.contains(value) {
            throw UsageError("--\(name) must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
        return value
    }

    public func double(_ name: String) throws -> Double? {
        guard let text = string(name) else { return nil }
        do { return try OptionParsing.double(text, in: nil) } catch let error as UsageError { throw UsageError("--\(name) \(error)") }
    }

    /// A comma-separated list (`--kinds train,eval`); empty items are dropped.
    public func list(_ name: String) -> [String]? {
        string(name).map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }

    /// One of a fixed set of words.
    public func choice(_ name: String, _ allowed: [String]) throws -> String? {
        guard let value = string(name) else { return nil }
        guard allowed.contains(value) else {
            throw UsageError("--\(name) must be one of \(allowed.joined(separator: ", ")), got '\(value)'")
        }
        return value
    }

    public mutating func set(_ name: String, _ value: String) { values[name, default: []].append(value) }
}

import Foundation
