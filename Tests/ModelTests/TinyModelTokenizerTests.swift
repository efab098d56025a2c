import Foundation
import Model
import Testing
import TestSupport

/// The tiny model's GGUF, written once to a temporary directory.
private let tinyFolder = TemporaryDirectory("tiny-tokenizer")
private let tinyModel: URL = {
    let url = tinyFolder.file("tiny.gguf")
    try! TinyModel(seed: 3).write(to: url)
    return url
}()

@Test func tinyModelTokenizerLoadsFromItsGGUF() throws {
    let tokenizer = try Tokenizer(gguf: try GGUFFile(url: tinyModel))
    #expect(tokenizer.count == TinyModel.vocabulary.tokens.count)
    #expect(tokenizer.preTokenizer == .smollm)
    #expect(tokenizer.bos == 1 && tokenizer.eos == 2 && !tokenizer.addBOS)
    for text in ["hello world", "Hello, world! 123\n\n  it is the end", "naïve 👍 日本", ""] {
        let ids = tokenizer.encode(text)
        #expect(try tokenizer.decodeBytes(ids) == Array(text.utf8))
        #expect(ids.allSatisfy { !tokenizer.isSpecial($0) })
    }
    #expect(tokenizer.encode(" the") == [tokenizer.id(of: "Ġthe")!])
    #expect(tokenizer.encode("<|im_start|>user", parseSpecial: true).first == 1)
}

@Test func tinyModelChatTemplateGivesItsOwnDefaultSystemLine() throws {
    let file = try GGUFFile(url: tinyModel)
    let formatter = try ChatFormatter(gguf: file)
    #expect(formatter.convention == .chatml)
    #expect(formatter.defaultSystem == TinyModel.systemLine)
    let text = try formatter.format([.user("hi")])
    #expect(text == "<|im_start|>system\n\(TinyModel.systemLine)<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    try formatter.validate(against: try Tokenizer(gguf: file))
}

@Test func anUnknownTokenizerModelIsATypedErrorNamingItAndTheSupportedOnes() throws {
    var writer = TinyModel(seed: 1).writer()
    writer.set("tokenizer.ggml.model", string: "t5")
    let url = tinyFolder.file("t5.gguf")
    try writer.write(to: url)
    let error = #expect(throws: ModelError.unsupportedTokenizer(model: "t5")) { try Tokenizer(gguf: try GGUFFile(url: url)) }
    #expect(error?.description.contains("gpt2 and llama") == true)
}

// MARK: adapt tokenize

@Test func tokenizeCommandPrintsIdsAndPiecesAsJSON() throws {
    let result = try Executables.run("adapt", ["tokenize", "--model", tinyModel.path, "--json", "--", "-the end"])
    #expect(result.status == 0, "\(result.stderr)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    #expect(Set(object.keys) == ["ids", "pieces"])
    let tokenizer = try Tokenizer(gguf: try GGUFFile(url: tinyModel))
    #expect(object["ids"] as? [Int] == tokenizer.encode("-the end"))
    #expect((object["pieces"] as? [String])?.joined() == "-the end")
}

@Test func tokenizeCommandAcceptsAnEmptyText() throws {
    let result = try Executables.run("adapt", ["tokenize", "--model", tinyModel.path, "--json", ""])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"ids":[],"pieces":[]}"#)
}

@Test func tokenizeCommandParsesControlTokensOnlyWithSpecial() throws {
    let plain = try Executables.run("adapt", ["tokenize", "--model", tinyModel.path, "--json", "<|im_start|>"])
    let special = try Executables.run("adapt", ["tokenize", "--model", tinyModel.path, "--special", "--json", "<|im_start|>"])
    #expect(special.stdout.contains(#""ids":[1]"#))
    #expect(!plain.stdout.contains(#""ids":[1]"#))
}

@Test func tokenizeCommandWithoutTheDefaultModelSaysHowToFetchIt() throws {
    let folder = TemporaryDirectory("tokenize-missing")
    let result = try Executables.run("adapt", ["--state", folder.path, "tokenize", "hello"])
    #expect(result.status == 1)
    #expect(result.stderr.contains("scripts/fetch-model"))
    #expect(result.stdout.isEmpty)
}

@Test func tokenizeHelpNamesTheDefaultModel() throws {
    let result = try Executables.run("adapt", ["tokenize", "--help"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("SmolLM2-135M-Instruct.Q4_1.gguf"))
}

@Test func llamaCppsDefaultPreTokenizerRuleIsRefusedByName() throws {
    var writer = TinyModel(seed: 1).writer()
    writer.set("tokenizer.ggml.pre", string: "default")
    let url = tinyFolder.file("default-pre.gguf")
    try writer.write(to: url)
    #expect(throws: ModelError.unsupportedPreTokenizer("default")) { try Tokenizer(gguf: try GGUFFile(url: url)) }
}
