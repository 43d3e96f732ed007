/// An operator's role in one tenant. Roles are cumulative: each includes those below it.
public enum Role: Int, Sendable, Comparable, CaseIterable, Codable, CustomStringConvertible {
    case viewer = 1
    case support = 2
    case cleaner = 3
    case admin = 4

    public var name: String {
        switch self {
        case .viewer: "viewer"
        case .support: "support"
        case .cleaner: "cleaner"
        case .admin: "admin"
        }
    }

    public var description: String { name }

    public init(name: String) throws(ConsoleError) {
        guard let role = Role.allCases.first(where: { $0.name == name.lowercased() }) else {
            throw .invalid(
                "invalid_role",
                "Invalid role \(SecretShape.quoted(name, limit: 20)): expected viewer, support, cleaner or admin.")
        }
        self = role
    }

    public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }
}
