/// Plain aligned columns, two spaces apart; the last column is never padded.
enum TextTable {
    static func render(header: [String], rows: [[String]], rightAligned: Set<Int> = []) -> [String] {
        let all = [header] + rows
        var widths = [Int](repeating: 0, count: header.count)
        for row in all {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        return all.map { row in
            var line = ""
            for (i, cell) in row.enumerated() {
                let last = i == row.count - 1
                let pad = String(repeating: " ", count: max(0, widths[i] - cell.count))
                if rightAligned.contains(i) {
                    line += pad + cell
                } else {
                    line += last ? cell : cell + pad
                }
                if !last { line += "  " }
            }
            return line
        }
    }
}
