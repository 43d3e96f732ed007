/// A statement of the shared store rules: SQL text with its values bound in place, written once
/// for every backend. Interpolating a value binds it (never pastes it); `\(raw:)` pastes SQL
/// the rules themselves wrote (column lists, a dialect's clause); `\(statement)` splices another
/// statement with its binds. A driver renders the placeholders its backend wants (``render(_:)``).
public struct SQLStatement: Sendable, ExpressibleByStringInterpolation {
    /// Text and bound values, in order.
    public enum Part: Sendable {
        case sql(String)
        case bind(SQLValue)
    }

    public private(set) var parts: [Part]

    public init(parts: [Part]) { self.parts = parts }

    public init(stringLiteral value: String) { parts = [.sql(value)] }

    public init(stringInterpolation: Interpolation) { parts = stringInterpolation.parts }

    public struct Interpolation: StringInterpolationProtocol {
        var parts: [Part] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            parts.reserveCapacity(2 * interpolationCount + 1)
        }

        public mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { parts.append(.sql(literal)) }
        }

        public mutating func appendInterpolation(_ value: some SQLBindable) { parts.append(.bind(value.sqlValue)) }

        /// An optional binds NULL when `nil`.
        public mutating func appendInterpolation<Value: SQLBindable>(_ value: Value?) {
            parts.append(.bind(value.sqlValue))
        }

        public mutating func appendInterpolation(raw sql: String) { parts.append(.sql(sql)) }

        public mutating func appendInterpolation(_ statement: SQLStatement) { parts += statement.parts }
    }

    /// Appends `other` (text and binds).
    public mutating func append(_ other: SQLStatement) { parts += other.parts }

    /// `items` joined by `separator`, each a statement.
    public static func joined(_ items: [SQLStatement], separator: String) -> SQLStatement {
        var result = SQLStatement(parts: [])
        for (i, item) in items.enumerated() {
            if i > 0 { result.parts.append(.sql(separator)) }
            result.parts += item.parts
        }
        return result
    }

    /// The SQL text with `placeholder(n)` for the n-th bound value (1-based), and the values.
    public func render(_ placeholder: (Int) -> String) -> (sql: String, binds: [SQLValue]) {
        var sql = ""
        var binds: [SQLValue] = []
        for part in parts {
            switch part {
            case .sql(let text): sql += text
            case .bind(let value):
                binds.append(value)
                sql += placeholder(binds.count)
            }
        }
        return (sql, binds)
    }
}
