import AdaptCore
import Foundation
@testable import Model
import Testing

/// Conversations rendered by Jinja2 (scripts/fixtures/chat_templates.py).
private struct TemplateDocument: Decodable {
    struct Template: Decodable { let text: String; let sha256: String }
    struct Case: Decodable {
        let template: String
        let messages: [ChatMessage]
        let add_generation_prompt: Bool
        let enable_thinking: Bool
        let rendered: String
    }
    let templates: [String: Template]
    let cases: [Case]
}

private let document: TemplateDocument = {
    let data = try! Data(contentsOf: RealModel.fixture("chat_templates.json"))
    return try! JSONDecoder().decode(TemplateDocument.self, from: data)
}()

@Test func formatterRendersEveryConversationExactlyAsJinjaDoes() throws {
    #expect(document.cases.count >= 50)
    for item in document.cases {
        let template = try #require(document.templates[item.template])
        let formatter = try ChatFormatter(template: template.text)
        let text = try formatter.format(item.messages, addGenerationPrompt: item.add_generation_prompt,
                                        enableThinking: item.enable_thinking)
        #expect(Array(text.utf8) == Array(item.rendered.utf8),
                "\(item.template) \(item.messages.map(\.role)): \(text.debugDescription) != \(item.rendered.debugDescription)")
    }
}

@Test func conventionAndDigestAreDetectedFromTheTemplate() throws {
    let expected: [String: ChatConvention] = ["smollm2": .chatml, "llama3": .llama3, "gemma": .gemma, "qwen3-tail": .chatml]
    for (name, convention) in expected {
        let template = try #require(document.templates[name])
        let formatter = try ChatFormatter(template: template.text)
        #expect(formatter.convention == convention)
        #expect(formatter.templateDigest == template.sha256)
    }
}

@Test func smolLM2DefaultSystemLineIsReadFromTheTemplate() throws {
    let template = try #require(document.templates["smollm2"])
    let formatter = try ChatFormatter(template: template.text)
    let line = try #require(formatter.defaultSystem)
    #expect(template.text.contains(line))
    #expect(line.hasPrefix("You are"))
    #expect(!formatter.supportsThinking)
}

@Test func thinkingSwitchIsDetectedOnlyWhereTheTemplateHasOne() throws {
    let qwen = try ChatFormatter(template: try #require(document.templates["qwen3-tail"]).text)
    #expect(qwen.supportsThinking)
    let off = try qwen.format([.user("Hi")], enableThinking: false)
    #expect(off.hasSuffix("<|im_start|>assistant\n<think>\n\n</think>\n\n"))
    let on = try qwen.format([.user("Hi")], enableThinking: true)
    #expect(on.hasSuffix("<|im_start|>assistant\n"))
}

@Test func unknownTemplateIsATypedErrorThatNamesTheWayOut() {
    let template = "{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"
    #expect(throws: ModelError.unknownChatTemplate(digest: Digest.sha256(template).hex)) {
        try ChatFormatter(template: template)
    }
    let message = ModelError.unknownChatTemplate(digest: Digest.sha256(template).hex).description
    #expect(message.contains("chatml") && message.contains("explicitly"))
}

@Test func gemmaRefusesTurnsThatDoNotAlternate() throws {
    let formatter = try ChatFormatter(template: try #require(document.templates["gemma"]).text)
    #expect(throws: ModelError.self) { try formatter.format([.user("a"), .user("b")]) }
}

@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))
func chatMarkersBecomeSingleControlTokensOfTheRealVocabulary() throws {
    let tokenizer = try #require(RealModel.tokenizer)
    let formatter = try ChatFormatter(template: try #require(document.templates["smollm2"]).text)
    try formatter.validate(against: tokenizer)
    let ids = tokenizer.encode(try formatter.format([.user("Hi")]), parseSpecial: true)
    #expect(ids.filter { $0 == tokenizer.id(of: "<|im_start|>") }.count == 3)
    #expect(ids.filter { $0 == tokenizer.id(of: "<|im_end|>") }.count == 2)
}
