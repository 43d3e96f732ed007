/// A tenant (deployment) name: 1–32 characters of `a-z 0-9 -`, starting with a letter, so it
/// is safe in prompts, file names and confirmations.
public struct TenantName: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(_ text: String) throws(ConsoleError) {
        guard (1...32).contains(text.utf8.count),
            let first = text.utf8.first, (97...122).contains(first),
            text.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 })
        else {
            throw .invalid(
                "invalid_tenant_name",
                "Invalid tenant name \(SecretShape.quoted(text, limit: 40)): expected 1-32 characters of a-z, 0-9 and '-', starting with a letter."
            )
        }
        rawValue = text
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }

    public var description: String { rawValue }
    public static func < (a: TenantName, b: TenantName) -> Bool { a.rawValue < b.rawValue }
}

/// An operator name: same alphabet as tenants plus `.` and `_`, 1–64 characters.
public struct OperatorName: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(_ text: String) throws(ConsoleError) {
        guard (1...64).contains(text.utf8.count),
            let first = text.utf8.first, (97...122).contains(first),
            text.utf8.allSatisfy({
                (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 46 || $0 == 95
            })
        else {
            throw .invalid(
                "invalid_operator_name",
                "Invalid operator name \(SecretShape.quoted(text, limit: 40)): expected 1-64 characters of a-z, 0-9, '-', '.', '_', starting with a letter."
            )
        }
        rawValue = text
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }

    public var description: String { rawValue }
    public static func < (a: OperatorName, b: OperatorName) -> Bool { a.rawValue < b.rawValue }
}
