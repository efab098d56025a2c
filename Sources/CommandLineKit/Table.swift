/// A plain text table for people; `--json` is the form for programs. Cells are stored text (example previews,
/// run names, error messages), so each is escaped for the terminal (`TerminalText`) as it is added.
public struct Table {
    public let headers: [String]
    public private(set) var rows: [[String]] = []

    public init(_ headers: String...) { self.headers = headers.map { TerminalText.escaped($0) } }
    public init(headers: [String]) { self.headers = headers.map { TerminalText.escaped($0) } }

    public mutating func append(_ row: [String]) {
        precondition(row.count == headers.count, "table row has \(row.count) cells, header has \(headers.count)")
        rows.append(row.map { TerminalText.escaped($0) })
    }

    public func render() -> String {
        var widths = headers.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == cells.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}
