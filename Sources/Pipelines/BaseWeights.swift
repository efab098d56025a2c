/// `train.base_weights`: how the train and eval steps keep the frozen base model in memory. The names are
/// Model's `BaseWeightStorage`s (Pipelines does not import Model; a Steps test keeps the two lists equal).
///
/// `quantized` (the default) keeps the GGUF file's own types and dequantizes a matrix at a time, so training
/// needs about the file's size rather than four bytes a weight; `f32` dequantizes the whole model at load, the
/// arithmetic of every run planned before the field existed. The two differ in the last bits of the logits, so a
/// run's inputs carry the choice and a replay computes with the recorded one.
public enum BaseWeights: String, Sendable, Codable, CaseIterable {
    case quantized, f32
}
