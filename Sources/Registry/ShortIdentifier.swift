import AdaptCore

/// A name made only of letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit):
/// lineages, chat conventions, module names, actors.
///
/// The narrow alphabet is what keeps user text out of the registry by construction: a sentence, an email
/// address or a prompt cannot be one, and decoding refuses anything else.
public struct ShortIdentifier: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let value: String

    public static let maximumLength = 64

    public init?(_ value: String) {
        guard Self.isValid(value) else { return nil }
        self.value = value
    }

    /// A lineage name is always an identifier: `Lineage.rule`'s alphabet is this one without '.'.
    public init(_ lineage: Lineage) {
        value = lineage.name
    }

    /// Validates `value`, naming `field` (not the value) in the error.
    public init(validating value: String, field: String) throws {
        guard Self.isValid(value) else { throw RegistryError.invalidIdentifier(field: field) }
        self.value = value
    }

    public static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumLength else { return false }
        func alphanumeric(_ b: UInt8) -> Bool { (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) }
        return alphanumeric(bytes[0]) && bytes.allSatisfy { alphanumeric($0) || $0 == 46 || $0 == 95 || $0 == 45 }
    }

    public var description: String { value }
    public static func < (a: Self, b: Self) -> Bool { a.value < b.value }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard Self.isValid(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a short identifier"))
        }
        value = text
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
