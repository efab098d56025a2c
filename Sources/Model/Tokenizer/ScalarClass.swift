/// The Unicode classes a byte-level pre-tokenizer splits on, one byte per code point.
///
/// llama.cpp (unicode.cpp, `unicode_cpt_flags`) classifies each code point by its general category:
/// `\p{L}` is Lu, Ll, Lt, Lm and Lo, `\p{N}` is Nd, Nl and No, and `\s` is the Unicode White_Space
/// property. Combining marks (M) are none of these, so a decomposed accent falls into the
/// "other" run `[^\s\p{L}\p{N}]+`, exactly as in the reference.
///
/// llama.cpp's tables (unicode-data.cpp) are generated from Unicode 15.1, while Swift's standard library
/// follows newer Unicode versions; a code point assigned later is unclassified in llama.cpp, so it is here
/// too. With that rule the classes agree with llama.cpp's on all 1,114,112 code points (checked against
/// the unicode-data.cpp that llama-cpp-python 0.3.36 ships).
struct ScalarClass: OptionSet, Sendable {
    let rawValue: UInt8

    static let letter = ScalarClass(rawValue: 1)
    static let number = ScalarClass(rawValue: 2)
    static let whitespace = ScalarClass(rawValue: 4)

    /// Neither whitespace, letter nor number: what `[^\s\p{L}\p{N}]` matches.
    var isOther: Bool { rawValue & 7 == 0 }

    /// The class of `value` (a Unicode scalar value; surrogates never occur in a Swift string).
    @inline(__always)
    static func of(_ value: UInt32) -> ScalarClass {
        if value < 0x10000 { return ScalarClassTable.basic[Int(value)] }
        return compute(value)
    }

    static func compute(_ value: UInt32) -> ScalarClass {
        guard let scalar = Unicode.Scalar(value) else { return [] }
        guard let age = scalar.properties.age, age.major < 15 || (age.major == 15 && age.minor <= 1) else { return [] }
        var result: ScalarClass = []
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
            result.insert(.letter)
        case .decimalNumber, .letterNumber, .otherNumber:
            result.insert(.number)
        default:
            break
        }
        if scalar.properties.isWhitespace { result.insert(.whitespace) }
        return result
    }
}

/// The classes of the Basic Multilingual Plane, computed once (about 64 KB); rarer planes are
/// classified on the fly.
enum ScalarClassTable {
    static let basic: [ScalarClass] = (0..<0x10000).map { value -> ScalarClass in
        (0xD800...0xDFFF).contains(value) ? [] : ScalarClass.compute(UInt32(value))
    }
}
