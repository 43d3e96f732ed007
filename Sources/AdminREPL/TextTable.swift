/// Aligned columns for table mode, fitted to the terminal width by shrinking the widest
/// column with an ellipsis.
struct TextTable {
    var headers: [String]
    var rows: [[String]]

    init(_ headers: [String], _ rows: [[String]]) {
        self.headers = headers
        self.rows = rows
    }

    /// Cells are escaped (``SafeText/cell(_:)``): a value from outside cannot break a row or
    /// drive the terminal.
    func render(_ style: RenderStyle) -> String {
        guard !headers.isEmpty else { return "" }
        let rows = self.rows.map { $0.map(SafeText.cell) }
        var widths = headers.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count {
                widths[i] = max(widths[i], visibleWidth(cell))
            }
        }
        if let limit = style.width {
            // Shrink the widest columns until the line fits, keeping at least 8 characters each.
            let gap = 2 * (widths.count - 1)
            while widths.reduce(0, +) + gap > limit, let widest = widths.indices.max(by: { widths[$0] < widths[$1] }),
                widths[widest] > 8
            {
                widths[widest] -= 1
            }
        }
        // A column whose every filled cell is a number is right-aligned, header included.
        let numeric = headers.indices.map { i in
            let cells = rows.compactMap { i < $0.count ? plain($0[i]) : nil }.filter { !$0.isEmpty && $0 != "-" }
            return !cells.isEmpty && cells.allSatisfy(Readable.isNumeric)
        }
        var lines: [String] = []
        lines.append(style.bold(line(headers, widths, numeric)))
        for row in rows { lines.append(line(row, widths, numeric)) }
        return lines.joined(separator: "\n")
    }

    private func line(_ cells: [String], _ widths: [Int], _ numeric: [Bool]) -> String {
        var parts: [String] = []
        for (i, width) in widths.enumerated() {
            let cell = i < cells.count ? cells[i] : ""
            let fitted = fit(cell, width)
            let gap = max(0, width - visibleWidth(fitted))
            if numeric[i] {
                parts.append(String(repeating: " ", count: gap) + fitted)
            } else {
                parts.append(fitted + String(repeating: " ", count: i == widths.count - 1 ? 0 : gap))
            }
        }
        var text = parts.joined(separator: "  ")
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }

    private func fit(_ cell: String, _ width: Int) -> String {
        guard visibleWidth(cell) > width, !cell.contains("\u{1B}") else { return cell }
        return String(cell.prefix(max(0, width - 1))) + "…"
    }
}

/// The text of a cell without ANSI colour sequences and their marks.
private func plain(_ s: String) -> String {
    guard s.contains("\u{1B}") else { return s }
    var out = ""
    var inEscape = false
    for ch in SafeText.unmarked(s).unicodeScalars {
        if inEscape {
            if ch == "m" { inEscape = false }
        } else if ch == "\u{1B}" {
            inEscape = true
        } else {
            out.unicodeScalars.append(ch)
        }
    }
    return out
}

/// Character count ignoring ANSI colour sequences and their marks (``SafeText/mark``); other
/// private-use characters in data count.
func visibleWidth(_ s: String) -> Int {
    var count = 0
    var inEscape = false
    let scalars = Array(s.unicodeScalars)
    let mark = SafeText.markScalars
    var i = 0
    while i < scalars.count {
        let ch = scalars[i]
        if inEscape {
            if ch == "m" { inEscape = false }
        } else if ch == "\u{1B}" {
            inEscape = true
        } else if ch == mark[0], i + mark.count <= scalars.count, Array(scalars[i..<i + mark.count]) == mark {
            i += mark.count
            continue
        } else {
            count += 1
        }
        i += 1
    }
    return count
}

/// `key: value` lines with the keys aligned.
func keyValueBlock(_ pairs: [(String, String)], _ style: RenderStyle) -> String {
    let width = pairs.map(\.0.count).max() ?? 0
    return pairs.map { key, value in
        style.bold(key + ":") + String(repeating: " ", count: width - key.count + 1) + SafeText.cell(value)
    }.joined(separator: "\n")
}
