import Foundation
import Model
import Testing
import TestSupport

/// `--chat-format`: a model without a template is refused until a convention is named; a named convention
/// overrides the template, keeping the template's own details when it is of that family.
@Suite struct ChatFormatOptionTests {
    static let folder = TemporaryDirectory("chat-format")

    static func file(template: Bool) throws -> GGUFFile {
        var model = TinyModel(seed: 1)
        if !template { model.template = nil }
        let url = folder.file(template ? "chat.gguf" : "base.gguf")
        try model.write(to: url)
        return try GGUFFile(url: url)
    }

    @Test func aModelWithoutATemplateIsRefusedNamingTheOption() throws {
        let base = try Self.file(template: false)
        #expect(throws: ModelError.noChatTemplate) { try ChatFormatter(gguf: base) }
        let message = ModelError.noChatTemplate.description
        #expect(message.contains("--chat-format plain") && message.contains(#""chat_format": "plain""#))
        let plain = try ChatFormatter(gguf: base, chatFormat: .plain)
        #expect(plain.convention == .plain)
        #expect(try plain.trainingPair([.user("How?"), .assistant(" Like this.")]) == ("How?", " Like this."))
    }

    @Test func aNamedConventionOverridesTheTemplateAndKeepsItsDetailsWhenOfTheSameFamily() throws {
        let chat = try Self.file(template: true)
        let own = try ChatFormatter(gguf: chat)
        let same = try ChatFormatter(gguf: chat, chatFormat: .chatml)
        #expect(same.templateDigest == own.templateDigest && same.defaultSystem == TinyModel.systemLine)
        let plain = try ChatFormatter(gguf: chat, chatFormat: .plain)
        #expect(plain.convention == .plain && plain.templateDigest != own.templateDigest)
        #expect(try plain.format([.user("hi")]) == "hi")
    }
}
