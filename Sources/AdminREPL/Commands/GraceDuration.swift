import ArgumentParser
import BackupModel

/// `--grace`: how long a sub-org must stay unreferenced before it may be deleted.
/// `0`, `90`, `90s`, `30m`, `24h`, `2d` (seconds when no unit), at most a year.
struct GraceDuration: ExpressibleByArgument, Sendable, Equatable {
    let seconds: Int

    init(seconds: Int) { self.seconds = seconds }

    /// - Throws: `invalid_duration` naming the value and the accepted forms.
    init(parsing text: String) throws(ConsoleError) {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var number = Substring(text)
        var scale = 1
        if let last = text.last, let unit = units[last] {
            number = number.dropLast()
            scale = unit
        }
        guard let value = Int(number), value >= 0, value <= 365 * 86_400 / scale else {
            throw .invalid(
                "invalid_duration",
                "--grace must be a duration like 0, 90s, 30m, 24h or 2d, got \(SecretShape.excerpt(text, limit: 64)).")
        }
        seconds = value * scale
    }

    init?(argument: String) {
        do {
            try self.init(parsing: argument)
        } catch {
            ArgumentFailure.record(error)
            return nil
        }
    }
}
