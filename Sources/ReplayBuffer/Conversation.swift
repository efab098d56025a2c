import AdaptCore

/// One turn of a stored conversation: who spoke and what they said (scrubbed).
public struct Turn: Sendable, Equatable, Hashable, Codable {
    public enum Role: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
        case system, user, assistant
    }

    public let role: Role
    public let content: String

    public init(role: Role, content: String) {
        self.role = role
        self.content = content
    }
}

/// How whole conversations are told apart from single exchanges, read back, and shortened.
///
/// A conversation that is one exchange (an optional system turn, one user turn, one assistant turn, in that
/// order) is stored as a single-turn example, exactly as before conversations were kept whole: same id, same
/// row, same snapshot line, so earlier runs replay equal. Anything else keeps every turn.
public enum Conversation {
    /// Whether `turns` is one exchange, stored without its turns.
    public static func isSingleExchange(_ turns: [Turn]) -> Bool {
        switch turns.map(\.role) {
        case [.user, .assistant], [.system, .user, .assistant]: return true
        default: return false
        }
    }

    /// The fields a single-turn reader sees: the first system turn, the last user turn before the final
    /// assistant turn, and that assistant turn. Nil when the conversation does not end with an assistant turn
    /// that a user turn precedes.
    public static func lastExchange(_ turns: [Turn]) -> (system: String?, prompt: String, completion: String)? {
        guard let last = turns.last, last.role == .assistant,
              let user = turns.dropLast().last(where: { $0.role == .user }) else { return nil }
        return (turns.first(where: { $0.role == .system })?.content, user.content, last.content)
    }

    /// The turns of a single exchange, as a conversation (an empty prompt is still a user turn).
    public static func turns(system: String?, prompt: String, completion: String) -> [Turn] {
        (system.map { [Turn(role: .system, content: $0)] } ?? [])
            + [Turn(role: .user, content: prompt), Turn(role: .assistant, content: completion)]
    }

    /// `turns` shortened from its oldest turns until `tokens` of what is left is at most `maxTokens`: system
    /// turns and the last exchange (from the last user turn before the final assistant turn to the end) are
    /// always kept, and after a cut the conversation resumes at a user turn (a reply whose question was cut is
    /// cut too). Returns the kept turns and how many were dropped; a conversation that still does not fit once
    /// only those remain is returned as that.
    public static func truncated(_ turns: [Turn], maxTokens: Int, tokens: (Turn) -> Int) -> (turns: [Turn], dropped: Int) {
        func total(_ kept: [Turn]) -> Int { kept.reduce(0) { $0 + tokens($1) } }
        guard total(turns) > maxTokens,
              let lastUser = turns.dropLast().lastIndex(where: { $0.role == .user }) else { return (turns, 0) }
        var droppable = turns.indices.filter { $0 < lastUser && turns[$0].role != .system }
        var removed = Set<Int>()
        func kept() -> [Turn] { turns.indices.filter { !removed.contains($0) }.map { turns[$0] } }
        while !droppable.isEmpty, total(kept()) > maxTokens {
            removed.insert(droppable.removeFirst())
            // Drop up to the next user turn, so no assistant turn is left answering a question that is gone.
            while let next = droppable.first, turns[next].role != .user {
                removed.insert(droppable.removeFirst())
            }
        }
        return (kept(), removed.count)
    }
}

extension ExampleID {
    /// The id of a conversation of more than one exchange: the first 32 hex characters of SHA-256 over the
    /// lineage, the source and every turn (role and content), NUL-separated (no stored field contains a NUL,
    /// and roles are fixed words, so the fields pair up one way only). Versioned apart from single-turn ids.
    public static func make(lineage: String, turns: [Turn], source: String) -> String {
        let fields = ["example/v2", lineage, source] + turns.flatMap { [$0.role.rawValue, $0.content] }
        return String(Digest.sha256(fields.joined(separator: "\u{0}")).hex.prefix(32))
    }
}
