import BackupModel
import Foundation

/// Numbers and times for people, in table mode only (JSON keeps raw numbers and unix times).
enum Readable {
    /// `512 B`, `1.2 KiB`, `15.0 MiB`: binary units, one decimal above bytes.
    static func bytes(_ count: Int) -> String {
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count)
        var unit = "B"
        for next in ["KiB", "MiB", "GiB", "TiB"] where value >= 1024 {
            value /= 1024
            unit = next
        }
        return String(format: "%.1f", value) + " " + unit
    }

    /// `2026-03-02 09:15 UTC`, then the same instant in the local zone when that is not UTC:
    /// `2026-03-02 09:15 UTC (10:15 CET)`, with the local date too when it differs.
    static func time(_ seconds: Int64, zone: TimeZone = .current) -> String {
        let date = Date(timeIntervalSince1970: TimeInterval(seconds))
        let utc = format(date, "yyyy-MM-dd HH:mm", TimeZone(identifier: "UTC") ?? zone)
        guard zone.secondsFromGMT(for: date) != 0 || !["UTC", "GMT", "Etc/UTC", "Universal"].contains(zone.identifier)
        else { return utc + " UTC" }
        let sameDay = format(date, "yyyy-MM-dd", zone) == String(utc.prefix(10))
        let local = format(date, sameDay ? "HH:mm" : "yyyy-MM-dd HH:mm", zone)
        let abbreviation = zone.abbreviation(for: date) ?? zone.identifier
        return "\(utc) UTC (\(local) \(abbreviation))"
    }

    private static func format(_ date: Date, _ pattern: String, _ zone: TimeZone) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = pattern
        return formatter.string(from: date)
    }

    /// Whether a table cell reads as a number (`42`, `-3`, `1.2 MiB`, `12%`): such columns are
    /// right-aligned so digits line up.
    static func isNumeric(_ cell: String) -> Bool {
        var text = Substring(cell)
        for unit in [" B", " KiB", " MiB", " GiB", " TiB", "%"] where text.hasSuffix(unit) {
            text = text.dropLast(unit.count)
            break
        }
        if text.hasPrefix("-") { text = text.dropFirst() }
        guard let first = text.first, first.isASCII, first.isNumber else { return false }
        return text.allSatisfy { ($0.isASCII && $0.isNumber) || $0 == "." || $0 == "," }
    }

    /// A duration option: `90`, `90s`, `30m`, `24h`, `30d`, `2w` → seconds (at most ten years).
    static func duration(_ text: String, option: String) throws(ConsoleError) -> Int64 {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        var number = Substring(text)
        var scale: Int64 = 1
        if let last = text.last, let unit = units[last] {
            number = number.dropLast()
            scale = unit
        }
        guard let value = Int64(number), value >= 0, value <= 3650 * 86_400 / scale else {
            throw .invalid(
                "invalid_duration", "\(option) must be a duration like 90s, 30m, 24h, 30d or 2w, got \(text).")
        }
        return value * scale
    }
}
