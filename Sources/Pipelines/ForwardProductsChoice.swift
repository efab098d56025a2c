/// `train.forward_products`: how the train and eval steps multiply a base kept quantized by their activations
/// in the forward pass. The names are Model's `ForwardProducts` (Pipelines does not import Model; a Steps test
/// keeps the two lists equal).
///
/// `int8` (the default) reads the blocks with the integer kernels of a generation prompt where the CPU has
/// AVX-512 VNNI (elsewhere, or with `ADAPT_PROMPT_KERNELS=sgemm`, the steps stay on sgemm and record so);
/// `sgemm` multiplies the dequantized f32 values, the arithmetic of every run planned before the field
/// existed. A step input without it reads as `sgemm`, so those runs replay as recorded.
public enum ForwardProductsChoice: String, Sendable, Codable, CaseIterable {
    case int8, sgemm
}
