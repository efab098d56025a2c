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
    let expected: [String: ChatConvention] = ["smollm2": .chatml, "llama3": .llama3, "gemma": .gemma, "qwen3-tail": .chatml, "phi3": .phi3]
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
    #expect(message.contains("chatml") && message.contains("--chat-format"))
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

@Test func datedLlama31TemplateIsRefusedNotApproximated() {
    let template = "{{- bos_token }}<|start_header_id|>system<|end_header_id|>\n\n{{- \"Cutting Knowledge Date: December 2023\\n\" }}"
    #expect(throws: ModelError.unsupportedChatTemplate(convention: "llama3", feature: "a dated system header (Llama 3.1 and later)")) {
        try ChatFormatter(template: template)
    }
}

@Test func namedConventionFormatsWithoutATemplate() throws {
    let formatter = ChatFormatter(convention: .llama3)
    #expect(try formatter.format([.user(" hi ")])
            == "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
    #expect(formatter.defaultSystem == nil && !formatter.supportsThinking)
}

@Test func trainingPairSplitsAtTheAssistantTurnAndJoinsBackToTheFullRendering() throws {
    var checked = 0
    for item in document.cases where !item.add_generation_prompt && item.messages.count >= 2
        && item.messages.last?.role == "assistant" && item.template != "qwen3-tail" {
        let formatter = try ChatFormatter(template: try #require(document.templates[item.template]).text)
        let pair = try formatter.trainingPair(item.messages)
        #expect(pair.prompt + pair.completion == item.rendered)
        #expect(pair.prompt.hasSuffix(formatter.generationPrompt))
        #expect(pair.completion.hasSuffix(formatter.endOfTurn))
        checked += 1
    }
    #expect(checked >= 6)
    let formatter = ChatFormatter(convention: .chatml)
    #expect(throws: ModelError.self) { try formatter.trainingPair([.user("no answer")]) }
}

/// `plain` (a base model without a template): the turns' texts one after another, no markers, nothing
/// ending a turn but EOS; a training pair is the prompt and the completion, concatenated.
@Test func plainConcatenatesTheTurnsWithoutMarkers() throws {
    let plain = ChatFormatter(convention: .plain)
    #expect(try plain.format([.user("The sky is"), .assistant(" blue.")], addGenerationPrompt: false) == "The sky is blue.")
    let pair = try plain.trainingPair([.user("The sky is"), .assistant(" blue.")])
    #expect(pair.prompt == "The sky is" && pair.completion == " blue.")
    #expect(plain.endOfTurnToken == nil && plain.convention.markers.isEmpty)
    #expect(ChatConvention(template: "{{ messages[0]['content'] }}") == nil)
}

/// Phi-3 closes every turn with `<|end|>`, which generation stops on, and knows no other roles.
@Test func phi3EndsTurnsWithItsEndTag() throws {
    let phi3 = ChatFormatter(convention: .phi3)
    #expect(phi3.endOfTurnToken == "<|end|>")
    #expect(try phi3.trainingPair([.user("Hi"), .assistant("Hello")]) == ("<|user|>\nHi<|end|>\n<|assistant|>\n", "Hello<|end|>\n"))
    #expect(throws: ModelError.self) { try phi3.format([ChatMessage(role: "tool", content: "x")]) }
}
