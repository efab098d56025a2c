import AdaptCore

/// The weights a candidate is measured against: the lineage's active adapter, or the base model when it has
/// none. Written as the adapter blob's digest, or `base`.
public enum ComparedAdapter: Sendable, Equatable, Codable, CustomStringConvertible {
    case base
    case adapter(Digest)

    public init(_ digest: Digest?) { self = digest.map(ComparedAdapter.adapter) ?? .base }

    public var digest: Digest? {
        if case let .adapter(digest) = self { return digest }
        return nil
    }

    public var description: String { digest?.hex ?? "base" }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        if text == "base" { self = .base; return }
        guard let digest = Digest(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "neither 'base' nor a SHA-256 hex digest"))
        }
        self = .adapter(digest)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
