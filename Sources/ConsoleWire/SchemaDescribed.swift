import BackupModel

/// A type whose JSON form the schema probe cannot read from its decoder: a tagged union whose
/// `init(from:)` switches on a discriminator, or free-form JSON. It states its schema, and
/// an example the probe decodes to obtain a value.
///
/// The statement is checked, not trusted: the schema tests decode every example, and every
/// answer the command tests see in server mode is validated against the document.
public protocol SchemaDescribed: Decodable {
    /// The JSON Schema of the type's encoded form (may `$ref` components it registers).
    static func jsonSchema(_ registry: SchemaRegistry) -> JSONValue
    /// A value of the type's JSON form, decoded to give the probe a value.
    static var schemaExample: JSONValue { get }
}

extension JSONValue: SchemaDescribed {
    public static func jsonSchema(_ registry: SchemaRegistry) -> JSONValue {
        ["description": "Any JSON value."]
    }
    public static var schemaExample: JSONValue { .null }
}

/// Builders for the schemas types state by hand.
extension JSONValue {
    /// `{"type": "object", "properties": …, "required": …, "additionalProperties": false}`.
    public static func object(
        _ properties: [String: JSONValue], required: [String], description: String? = nil, title: String? = nil
    ) -> JSONValue {
        var schema: [String: JSONValue] = [
            "type": "object", "properties": .object(properties), "additionalProperties": false,
        ]
        if !required.isEmpty { schema["required"] = .array(required.sorted().map(JSONValue.string)) }
        if let description { schema["description"] = .string(description) }
        if let title { schema["title"] = .string(title) }
        return .object(schema)
    }

    /// A string that must be exactly `value` (a union's discriminator).
    public static func constant(_ value: String) -> JSONValue { ["type": "string", "enum": [.string(value)]] }

    public static var stringType: JSONValue { ["type": "string"] }
    public static var booleanType: JSONValue { ["type": "boolean"] }
    public static var integerType: JSONValue { ["type": "integer"] }
}

/// Times are RFC 3339 UTC text.
extension UTCSeconds: SchemaDescribed {
    public static func jsonSchema(_ registry: SchemaRegistry) -> JSONValue {
        ["type": "string", "format": "date-time", "description": "RFC 3339, UTC (2026-11-25T11:46:00Z)."]
    }
    public static var schemaExample: JSONValue { "2026-11-25T11:46:00Z" }
}

extension OptionalUTCSeconds: SchemaDescribed {
    public static func jsonSchema(_ registry: SchemaRegistry) -> JSONValue { UTCSeconds.jsonSchema(registry) }
    public static var schemaExample: JSONValue { "2026-11-25T11:46:00Z" }
}

extension UTCMillis: SchemaDescribed {
    public static func jsonSchema(_ registry: SchemaRegistry) -> JSONValue {
        [
            "type": "string", "format": "date-time",
            "description": "RFC 3339, UTC, with milliseconds (2026-11-25T11:46:00.123Z).",
        ]
    }
    public static var schemaExample: JSONValue { "2026-11-25T11:46:00.123Z" }
}
