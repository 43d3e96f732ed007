/// Literals for JSON values built in code (the API's schemas and its OpenAPI document).
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// The members of an object (empty for anything else).
    public var objectValue: [String: JSONValue] {
        if case .object(let members) = self { return members }
        return [:]
    }

    /// The elements of an array (empty for anything else).
    public var arrayValue: [JSONValue] {
        if case .array(let elements) = self { return elements }
        return []
    }
}
