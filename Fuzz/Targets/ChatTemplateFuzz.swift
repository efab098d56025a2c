import AdaptCore
import Foundation
import Model

/// Chat templates from a GGUF's `tokenizer.chat_template`: recognised (or refused) by their markers, then used
/// to format conversations whose text is the rest of the input.
public enum ChatTemplateFuzz: FuzzTarget {
    public static let name = "chat-template"

    public static func run(_ data: Data) {
        let (templateBytes, contentBytes) = FuzzInput.split(data)
        guard let formatter = try? ChatFormatter(template: String(decoding: templateBytes, as: UTF8.self)) else { return }
        let content = String(decoding: contentBytes, as: UTF8.self)
        let conversations: [[ChatMessage]] = [
            [.user(content), .assistant(content)],
            [.system(content), .user(content), .assistant(content), .user(content), .assistant(content)],
            [.user(content)],
            [ChatMessage(role: content, content: content)],
        ]
        for messages in conversations {
            _ = try? formatter.format(messages, addGenerationPrompt: true, enableThinking: false)
            _ = try? formatter.format(messages, addGenerationPrompt: false)
            _ = try? formatter.trainingPair(messages)
            _ = try? formatter.trainingSegments(messages)
        }
        _ = formatter.generationPrompt
        _ = formatter.endOfTurn
    }

    public static func seeds() throws -> [Data] {
        let fixture = try JSONDecoder().decode(JSONValue.self, from: FuzzFixtures.data("Tests/ModelTests/Fixtures/chat_templates.json"))
        let templates = fixture["templates"]?.objectValue ?? [:]
        return templates.keys.sorted().compactMap { key in
            guard let text = templates[key]?["text"]?.stringValue, text.utf8.count <= 0xFFFF else { return nil }
            return FuzzInput.joined(Data(text.utf8), Data("Hello <|im_end|> there".utf8))
        }
    }
}
