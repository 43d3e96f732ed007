/// A factor's creation time: RFC 3339 in the service's stored form, unix seconds in the
/// exported form. The stored text is kept as it came so a stored-form round trip is exact
/// (chrono writes up to nine fractional digits, more than a `Double` keeps).
public struct Timestamp: Sendable, Equatable, Comparable, Codable, CustomStringConvertible {
    /// The instants a metadata timestamp may name: years 0001 to 9999, the range RFC 3339 text
    /// can write with four year digits. Numbers outside it are refused when decoding, so no
    /// arithmetic on an imported `createdAt` can overflow and every stored form re-parses.
    public static let validSeconds: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

    public let seconds: Int64
    /// The RFC 3339 text this came from, if it came from one.
    public let rfc3339: String

    public init(seconds: Int64) {
        self.seconds = seconds
        rfc3339 = Self.format(seconds)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ r: Range<Int>) -> Int? {
            guard r.upperBound <= b.count else { return nil }
            var v = 0
            for i in r {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, b[4] == 45, b[7] == 45, b[10] == 84 || b[10] == 116, b[13] == 58,
            b[16] == 58,
            let year = num(0..<4), let month = num(5..<7), let day = num(8..<10),
            let hour = num(11..<13), let minute = num(14..<16), let second = num(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        if i < b.count, b[i] == 46 {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45, let oh = num(i + 1..<i + 3), i + 3 < b.count, b[i + 3] == 58,
            let om = num(i + 4..<i + 6)
        {
            offset = (oh * 60 + om) * 60 * (b[i] == 43 ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        let value = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        guard Self.validSeconds.contains(value) else { return nil }
        seconds = value
        rfc3339 = text
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let n = try? c.decode(Int64.self) {
            guard Self.validSeconds.contains(n) else {
                throw DecodingError.dataCorruptedError(
                    in: c,
                    debugDescription:
                        "createdAt must be unix seconds between \(Self.validSeconds.lowerBound) and \(Self.validSeconds.upperBound) (years 0001-9999), got \(n)"
                )
            }
            self.init(seconds: n)
        } else {
            let text = try c.decode(String.self)
            guard let t = Timestamp(rfc3339: text) else {
                throw DecodingError.dataCorruptedError(
                    in: c,
                    debugDescription:
                        "createdAt must be RFC 3339 (years 0001-9999) or unix seconds, got \(SecretShape.quoted(text, limit: 40))"
                )
            }
            self = t
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if encoder.metadataForm == .exported {
            try c.encode(seconds)
        } else {
            try c.encode(rfc3339)
        }
    }

    public var description: String { Self.format(seconds) }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.seconds < b.seconds }
    public static func == (a: Timestamp, b: Timestamp) -> Bool { a.seconds == b.seconds }

    /// `YYYY-MM-DDTHH:MM:SSZ` in UTC. Total over `Int64`: floor division without the
    /// `seconds - 86_399` that overflowed near `Int64.min` (years past 9999 print as they are).
    public static func format(_ seconds: Int64) -> String {
        let (quotient, remainder) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let days = Int(remainder < 0 ? quotient - 1 : quotient)
        let rem = Int(remainder < 0 ? remainder + 86_400 : remainder)
        let (y, m, d) = civilFromDays(days)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = String(y)
        let paddedYear = String(repeating: "0", count: max(0, 4 - year.count)) + year
        return
            "\(paddedYear)-\(two(m))-\(two(d))T\(two(rem / 3600)):\(two(rem / 60 % 60)):\(two(rem % 60))Z"
    }

    // Howard Hinnant's civil-date algorithms.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
