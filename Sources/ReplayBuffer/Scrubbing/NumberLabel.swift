/// Words that say what a number is (`order`, `invoice`, `account`, `ref`, `ISBN`, …), and when one of them names
/// the number after it.
///
/// A label names a number when it stands right before it, with nothing between them but separators (`:`, `#`, `.`,
/// `=`, `-`) and at most three words like `no.`, `number`, `ID` or `is`: `order 0123456789`, `Invoice no.
/// 0123456789`, `Your order number is 612345678`, `Rechnung Nr. 0123456789`. A label further away does not: in
/// `please send the invoice to 01154960625` the number is where the invoice goes, not its number. Nor does one
/// after a preposition and a determiner (`for the account:`, `on your order`), which points at a thing already
/// known rather than introducing its number (`New number for the account: 0161 496 0000`).
enum NumberLabel {
    /// `*` marks a stem (`bestell*` covers Bestellung and Bestellnummer).
    static let labels: [[UInt8]] = [
        "isbn", "issn", "sku", "order*", "invoice*", "ref*", "référen*", "riferiment*", "ticket*", "tracking", "art",
        "item*", "bestell*", "rechnung*", "kunden*", "commande*", "facture*", "pedido*", "factura*", "ordine*",
        "fattura*", "bestelling*", "factuur*", "serial*", "account*", "acct", "konto*", "compte*", "cuenta*", "conto*",
        "rekening*", "customer*",
    ].map { Array($0.utf8) }

    /// Words that may stand between a label and its number.
    static let qualifiers: Set<[UInt8]> = Set([
        "no", "nr", "n", "n°", "nº", "º", "num", "number", "nummer", "numéro", "número", "numero", "id", "is", "code",
    ].map { Array($0.utf8) })

    static let prepositions: Set<[UInt8]> = Set(["for", "to", "with", "about", "on", "from", "of", "regarding", "in"].map { Array($0.utf8) })
    static let determiners: Set<[UInt8]> = Set(["the", "your", "our", "my", "this", "that", "his", "her", "their"].map { Array($0.utf8) })

    static let separators: [UInt8] = [UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "#"), UInt8(ascii: "."), UInt8(ascii: "="),
                                      UInt8(ascii: "-")]

    /// True when a label names the number that starts at `start`.
    static func namesNumber(at start: Int, in bytes: [UInt8]) -> Bool {
        var end = start
        for _ in 0...3 {
            guard let word = word(endingBefore: &end, in: bytes) else { return false }
            if isLabel(word) { return !pointsBack(before: end, in: bytes) }
            guard qualifiers.contains(word) else { return false }
        }
        return false
    }

    /// The lower-cased word before `end` (separators skipped); `end` moves to the word's first byte.
    private static func word(endingBefore end: inout Int, in bytes: [UInt8]) -> [UInt8]? {
        var index = end
        while index > 0, separators.contains(bytes[index - 1]) { index -= 1 }
        var wordStart = index
        while wordStart > 0, ASCII.isWordByte(bytes[wordStart - 1]) { wordStart -= 1 }
        guard wordStart < index else { return nil }
        end = wordStart
        return bytes[wordStart..<index].map(ASCII.lower)
    }

    /// A preposition and a determiner right before the label at `labelStart` (`for the account`).
    private static func pointsBack(before labelStart: Int, in bytes: [UInt8]) -> Bool {
        var end = labelStart
        guard let determiner = word(endingBefore: &end, in: bytes), determiners.contains(determiner),
              let preposition = word(endingBefore: &end, in: bytes) else { return false }
        return prepositions.contains(preposition)
    }

    private static func isLabel(_ word: [UInt8]) -> Bool {
        labels.contains { pattern in
            pattern.last == UInt8(ascii: "*") ? word.starts(with: pattern.dropLast()) : word == pattern
        }
    }
}
