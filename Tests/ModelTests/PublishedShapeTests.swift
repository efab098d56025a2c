import Foundation
import Model
import Testing
import TestSupport

/// The published shapes `adapt model synth` writes: the table against each model's config.json, and a file of
/// each shape (fewer blocks, a small vocabulary) read back by the loader.
struct PublishedShapeTests {
    static let folder = TemporaryDirectory("published-shapes")

    /// The fields of each model's config.json on Hugging Face that fix its shape, as published (docs/model.md).
    static let configurations: [String: String] = [
        "Qwen/Qwen2.5-0.5B-Instruct": """
            {"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896, "intermediate_size": 4864,
             "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 32768,
             "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": true}
            """,
        "meta-llama/Llama-3.2-1B-Instruct": """
            {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048, "intermediate_size": 8192,
             "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
             "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-05, "tie_word_embeddings": true,
             "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                              "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
            """,
        "google/gemma-3-1b-it": """
            {"model_type": "gemma3_text", "num_hidden_layers": 26, "hidden_size": 1152, "intermediate_size": 6912,
             "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144,
             "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
             "rms_norm_eps": 1e-06, "sliding_window": 512, "sliding_window_pattern": 6, "query_pre_attn_scalar": 256,
             "rope_scaling": null, "tie_word_embeddings": true}
            """,
        "Qwen/Qwen3-1.7B": """
            {"model_type": "qwen3", "num_hidden_layers": 28, "hidden_size": 2048, "intermediate_size": 6144,
             "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
             "max_position_embeddings": 40960, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": true}
            """,
    ]

    @Test(arguments: PublishedShape.all.map(\.name))
    func theShapeTableHoldsThePublishedConfiguration(name: String) throws {
        let shape = try #require(PublishedShape.named(name))
        let text = try #require(Self.configurations[shape.source], "no configuration cited for \(shape.source)")
        let config = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        func int(_ key: String) -> Int? { (config[key] as? NSNumber)?.intValue }
        func double(_ key: String) -> Double? { (config[key] as? NSNumber)?.doubleValue }
        #expect(shape.blockCount == int("num_hidden_layers"))
        #expect(shape.width == int("hidden_size"))
        #expect(shape.ffnWidth == int("intermediate_size"))
        #expect(shape.headCount == int("num_attention_heads"))
        #expect(shape.kvHeadCount == int("num_key_value_heads"))
        // Without head_dim, transformers takes hidden_size / num_attention_heads.
        #expect(shape.headDimension == int("head_dim") ?? int("hidden_size")! / int("num_attention_heads")!)
        #expect(shape.vocabularySize == int("vocab_size"))
        #expect(shape.contextLength == int("max_position_embeddings"))
        #expect(shape.ropeBase == Float(double("rope_theta")!))
        #expect(shape.rmsEpsilon == Float(double("rms_norm_eps")!))
        #expect(config["tie_word_embeddings"] as? Bool == true)
        #expect(shape.slidingWindow == int("sliding_window"))
        let architecture = try Architecture.named(shape.architecture)
        switch config["model_type"] as? String {
        case "gemma3_text":
            #expect(shape.architecture == "gemma3")
            #expect(architecture.slidingWindowPattern == int("sliding_window_pattern"))
            #expect(Double(architecture.slidingWindowRopeBase) == double("rope_local_base_freq"))
            // The loader scales q·k by 1/√D, which is Gemma 3 1B's 1/√query_pre_attn_scalar.
            #expect(shape.headDimension == int("query_pre_attn_scalar"))
            #expect(config["rope_scaling"] is NSNull)
        case let type:
            #expect(shape.architecture == type)
        }
        if let scaling = config["rope_scaling"] as? [String: Any] {
            #expect(scaling["rope_type"] as? String == "llama3")
            let expected = PublishedShape.Llama3RopeScaling(
                factor: (scaling["factor"] as! NSNumber).doubleValue, lowFrequencyFactor: (scaling["low_freq_factor"] as! NSNumber).doubleValue,
                highFrequencyFactor: (scaling["high_freq_factor"] as! NSNumber).doubleValue,
                originalContextLength: (scaling["original_max_position_embeddings"] as! NSNumber).doubleValue)
            #expect(shape.llama3RopeScaling == expected)
        } else {
            #expect(shape.llama3RopeScaling == nil)
        }
    }

    /// Qwen2.5-0.5B's model card gives 0.49B weights, 0.36B of them outside the embedding; Qwen3-1.7B's 1.7B and 1.4B.
    @Test func parameterCountsMatchTheModelCards() {
        let qwen25 = PublishedShape.qwen25_05B, qwen3 = PublishedShape.qwen3_17B
        #expect((0.485e9...0.495e9).contains(Double(qwen25.parameterCount)))
        #expect((0.355e9...0.365e9).contains(Double(qwen25.parameterCount - qwen25.vocabularySize * qwen25.width)))
        #expect((1.65e9...1.75e9).contains(Double(qwen3.parameterCount)))
        #expect((1.35e9...1.45e9).contains(Double(qwen3.parameterCount - qwen3.vocabularySize * qwen3.width)))
    }

    /// One block of each shape and a vocabulary of 1,000 tokens: the loader reads the shape's sizes back, every
    /// matrix is F16, the output is tied, and a pass gives finite logits.
    @Test(arguments: PublishedShape.all.map(\.name))
    func aSynthesizedFileLoadsWithItsShape(name: String) throws {
        let shape = try #require(PublishedShape.named(name))
        let url = Self.folder.file("\(name).gguf")
        try TinyModel(seed: 7, shape: shape, blocks: 1, vocabulary: 1000).write(to: url)
        let file = try GGUFFile(url: url)
        let h = try LlamaModel.Hyperparameters(file: file)
        #expect(h.architecture.name == shape.architecture)
        #expect(h.blockCount == 1)
        #expect(h.vocabularySize == 1000)
        let read: [Int] = [h.width, h.ffnWidth, h.headCount, h.kvHeadCount, h.headDimension, h.contextLength]
        let published: [Int] = [shape.width, shape.ffnWidth, shape.headCount, shape.kvHeadCount, shape.headDimension, shape.contextLength]
        #expect(read == published)
        #expect(h.ropeBase == shape.ropeBase)
        #expect(h.rmsEpsilon == shape.rmsEpsilon)
        #expect(h.slidingWindow == shape.slidingWindow)
        #expect(h.attentionScale == 1 / Float(shape.headDimension).squareRoot())
        #expect(file.tensor(named: "output.weight") == nil)
        let matrices = file.tensors.filter { $0.dimensions.count == 2 }
        #expect(!matrices.isEmpty && matrices.allSatisfy { $0.type == .f16 })
        #expect(file.tensors.filter { $0.dimensions.count == 1 }.allSatisfy { $0.type == .f32 })
        let factorCount: Int? = shape.llama3RopeScaling == nil ? nil : shape.headDimension / 2
        #expect(file.tensor(named: "rope_freqs.weight")?.elementCount == factorCount)
        #expect(file.string("tokenizer.ggml.pre") == shape.preTokenizer)
        let model = try LlamaModel(file: file)
        var cache = KVCache()
        let ids = try Tokenizer(gguf: file).encode("hello world, the shape")
        let logits = model.forward(tokens: ids, cache: &cache)
        #expect(logits.count == 1000 && logits.allSatisfy { $0.isFinite })
    }

    /// Llama 3.2's frequency divisors: 1 where a pair's wavelength is under 8192 / 4 positions, 32 over 8192,
    /// smooth between (transformers' _compute_llama3_parameters, as llama.cpp's converter writes them).
    @Test func llama32FrequencyFactorsFollowItsRopeScaling() {
        let factors = TinyModel(shape: .llama32_1B, blocks: 1, vocabulary: 1000).ropeFrequencyFactors!
        #expect(factors.count == 32)
        for (i, factor) in factors.enumerated() {
            let wavelength = 2 * Double.pi * pow(500_000, Double(2 * i) / 64)
            if wavelength < 2048 { #expect(factor == 1) } else if wavelength > 8192 { #expect(factor == 32) } else {
                #expect(factor > 1 && factor < 32)
            }
        }
        #expect(factors.first == 1 && factors.last == 32)
    }

    /// The vocabulary of a published size: exactly that many tokens, all distinct, every merge of two earlier
    /// tokens, and the tokenizer loads it and encodes text with the merges (fewer tokens than bytes).
    @Test func theSyntheticVocabularyHasThePublishedSizeAndTokenizes() throws {
        var model = TinyModel(seed: 1)
        model.vocabularySize = PublishedShape.qwen25_05B.vocabularySize
        let (tokens, types, merges) = model.fullVocabulary()
        #expect(tokens.count == 151_936)
        #expect(Set(tokens).count == tokens.count)
        #expect(types.count == tokens.count && types.filter { $0 == 3 }.count == TinyModel.specialTokens.count)
        var position: [String: Int] = [:]
        for (id, token) in tokens.enumerated() { position[token] = id }
        for merge in merges.suffix(1000) {
            let parts = merge.split(separator: " ").map(String.init)
            #expect(parts.count == 2)
            let joined = try #require(position[parts[0] + parts[1]])
            #expect(position[parts[0]]! < joined && position[parts[1]]! < joined)
        }
        let tokenizer = try Tokenizer(tokens: tokens, merges: merges, tokenTypes: types.map(Int.init), preTokenizer: "qwen2",
                                      bos: 1, eos: 2, addBOS: false)
        let text = "the quick brown fox jumps over the lazy dog"
        let ids = tokenizer.encode(text)
        #expect(ids.count < text.utf8.count)
        #expect(try tokenizer.decode(ids) == text)
    }
}
