import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt tokenize`: the ids and pieces of a text under a model's tokenizer.
enum TokenizeCommands {
    static let all: [Command] = [tokenize]


    static let model = Option<String?>(
        "model", value: "FILE",
        help: "GGUF model (default: STATE/models/\(DefaultModel.fileName), i.e. state/models/… in the default state directory)")
    static let special = Flag("special", help: "match control tokens such as <|im_start|> in TEXT")

    static let tokenize = Command(
        "tokenize",
        summary: "show the token ids and pieces of a text under a model's tokenizer",
        discussion: """
            TEXT may be empty; put it after -- when it starts with a dash. Pieces are the text each token \
            stands for; a byte that is only part of a character is shown as <0xNN>. BOS is never added.
            --json prints {"ids": [Int], "pieces": [String]}.
            """,
        options: [model, special, .json],
        positionals: [PositionalSpec("TEXT", help: "the text to tokenize")]
    ) { invocation in
        let arguments = invocation.arguments
        let url = try ModelService.modelURL(given: try arguments[model], state: try GlobalOptions.stateDirectory(invocation),
                                            fetchHint: true)
        let tokens = try ModelService.tokenize(try arguments.required("TEXT"), model: url, parseSpecial: arguments[special])
        let ids = tokens.ids
        let pieces = try ids.map { try tokens.piece($0) }
        if arguments[.json] {
            let document: JSONValue = .object(["ids": .array(ids.map { .int($0) }),
                                               "pieces": .array(pieces.map { .string($0) })])
            Console.print(JSON.canonicalString(document))
            return
        }
        var table = Table("ID", "PIECE")
        for (id, piece) in zip(ids, pieces) { table.append([String(id), visible(piece)]) }
        Console.print(table.render())
        Console.error("\(ids.count) tokens")
    }

    /// A piece on one table line, quoted so leading blanks show, with control characters escaped.
    static func visible(_ piece: String) -> String {
        var result = "\""
        for scalar in piece.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            default:
                if scalar.properties.generalCategory == .control {
                    result += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}
