import BackupModel
import ConsoleWire
import Foundation
import Testing

/// The schema probe reads a type's wire form from its own Codable, and the validator judges
/// values by it: small types here, the whole API in ConsoleServerTests.
@Suite struct SchemaTests {
    enum Colour: String, Codable, CaseIterable { case red, green }

    struct Paint: Codable {
        var colour: Colour
        var coats: Int
        var note: String?
        var tags: [String]
        var extra: [String: Int]
    }

    struct Wall: Codable {
        var paint: Paint
        var area: Double
    }

    @Test func theProbeReadsFieldsTypesRequiredAndEnums() throws {
        let registry = SchemaRegistry()
        #expect(registry.reference(Wall.self) == ["$ref": "#/components/schemas/SchemaTestsWall"])
        let paint = try #require(registry.components["SchemaTestsPaint"])
        #expect(paint["required"] == ["coats", "colour", "extra", "tags"])
        #expect(paint["properties"]?["colour"] == ["type": "string", "enum": ["red", "green"]])
        #expect(paint["properties"]?["note"] == ["anyOf": [["type": "string"], ["type": "null"]]])
        #expect(paint["properties"]?["tags"] == ["type": "array", "items": ["type": "string"]])
        #expect(paint["properties"]?["extra"]?["additionalProperties"]?["type"] == "integer")
        #expect(registry.failures.isEmpty)
    }

    @Test func theValidatorFollowsReferencesAndNamesWhatIsWrong() throws {
        let registry = SchemaRegistry()
        let wall = registry.reference(Wall.self)
        let validator = SchemaValidator(components: registry.components)
        let good: JSONValue = [
            "paint": ["colour": "red", "coats": 2, "tags": [], "extra": ["a": 1]], "area": .double(3.5),
        ]
        #expect(validator.violations(of: good, against: wall) == [])
        let bad: JSONValue = [
            "paint": ["colour": "blue", "coats": "2", "tags": [1], "extra": [:], "x": true], "area": 1,
        ]
        let found = validator.violations(of: bad, against: wall)
        #expect(found.contains { $0.hasPrefix("$.paint.colour:") })
        #expect(found.contains { $0 == "$.paint.coats: expected integer, got \"2\"" })
        #expect(found.contains { $0.hasPrefix("$.paint.tags[0]:") })
        #expect(found.contains { $0 == "$.paint: unexpected property x" })
        #expect(validator.violations(of: [:], against: wall).count == 2)
    }

    @Test func unionsCountTheirMatches() {
        let validator = SchemaValidator(components: [:])
        let either: JSONValue = ["oneOf": [["type": "integer"], ["type": "number"]]]
        #expect(validator.violations(of: .double(1.5), against: either) == [])
        #expect(!validator.violations(of: 3, against: either).isEmpty)  // both match: not one of
        #expect(validator.violations(of: 3, against: ["anyOf": [["type": "integer"], ["type": "number"]]]) == [])
    }

    @Test func integersStopWhereJSONStopsBeingExact() throws {
        let registry = SchemaRegistry()
        let schema = registry.reference(Paint.self)
        let validator = SchemaValidator(components: registry.components)
        func paint(_ coats: String) throws -> JSONValue {
            try JSONDecoder().decode(
                JSONValue.self, from: Data(#"{"colour":"red","coats":\#(coats),"tags":[],"extra":{}}"#.utf8))
        }
        #expect(validator.violations(of: try paint("9007199254740991"), against: schema) == [])
        #expect(validator.violations(of: try paint("9007199254740992"), against: schema).count == 1)
        #expect(validator.violations(of: try paint("9223372036854775808"), against: schema).count == 1)
    }

    @Test func aCompiledSchemaFollowsARecursiveComponentAndStopsAtItsDepth() {
        // A list node: a value and an optional next node, the same component.
        let node: JSONValue = [
            "type": "object", "required": ["value"], "additionalProperties": false,
            "properties": ["value": ["type": "integer"], "next": ["$ref": "#/components/schemas/Node"]],
        ]
        let compiled = SchemaValidator(components: ["Node": node]).compile(["$ref": "#/components/schemas/Node"])
        func list(_ values: [JSONValue]) -> JSONValue {
            values.reversed().reduce(JSONValue.null) { next, value in
                next == .null ? ["value": value] : ["value": value, "next": next]
            }
        }
        #expect(compiled.accepts(list([1, 2, 3])))
        #expect(compiled.violations(of: list([1, "two", 3])) == [#"$.next.value: expected integer, got "two""#])
        // Each reference is a level: 40 nodes nest past the walk's limit of 64 and are refused.
        let deep = list(Array(repeating: 1, count: 40))
        #expect(!compiled.accepts(deep))
        #expect(compiled.violations(of: deep).contains { $0.hasSuffix(": the schema nests too deep") })
        // An optional next node (an `anyOf` with null) counts its alternative as a level too, so
        // the walk stops at the same limit instead of following the body down.
        let optional: JSONValue = [
            "type": "object", "required": ["value"],
            "properties": [
                "value": ["type": "integer"],
                "next": ["anyOf": [["$ref": "#/components/schemas/Node"], ["type": "null"]]],
            ],
        ]
        let optionalList = SchemaValidator(components: ["Node": optional]).compile(
            ["$ref": "#/components/schemas/Node"])
        #expect(optionalList.accepts(list([1, 2, 3])))
        #expect(!optionalList.accepts(list(Array(repeating: 1, count: 40))))
        #expect(
            SchemaValidator(components: [:]).violations(of: 1, against: ["$ref": "#/components/schemas/Gone"])
                == ["$: unknown schema #/components/schemas/Gone"])
    }

    @Test func aCompiledPatternJudgesEveryStringTheSameWay() {
        let validator = SchemaValidator(components: [:])
        let base64 = validator.compile(["type": "string", "pattern": "^[A-Za-z0-9+/]*={0,2}$"])
        #expect(base64.accepts("aGVsbG8="))
        #expect(base64.violations(of: "not base64!") == ["$: does not match ^[A-Za-z0-9+/]*={0,2}$"])
        // Unanchored, a pattern is found anywhere in the string.
        #expect(validator.compile(["pattern": "b+"]).accepts("abba"))
        // A pattern ICU cannot compile matches nothing.
        #expect(validator.compile(["type": "string", "pattern": "(unclosed"]).violations(of: "x").count == 1)
    }

    @Test func acceptsIsTrueExactlyWhenThereAreNoViolations() throws {
        let registry = SchemaRegistry()
        let wall = registry.reference(Wall.self)
        let compiled = SchemaValidator(components: registry.components).compile(wall)
        let values: [JSONValue] = [
            ["paint": ["colour": "red", "coats": 2, "tags": [], "extra": ["a": 1]], "area": .double(3.5)],
            ["paint": ["colour": "green", "coats": 0, "tags": ["x"], "extra": [:], "note": nil], "area": 1],
            ["paint": ["colour": "red", "coats": .double(2.5), "tags": [], "extra": [:]], "area": 1],
            ["paint": ["colour": "red", "coats": 2, "tags": [], "extra": ["a": "b"]], "area": 1],
            ["paint": ["colour": "red", "coats": 2, "tags": [], "extra": [:]], "area": "wide"],
            ["paint": ["colour": "red", "coats": 2, "tags": [], "extra": [:], "note": 3], "area": 1],
            ["paint": 1, "area": 1], [:], [], "wall", nil, 7,
        ]
        for value in values {
            #expect(compiled.accepts(value) == compiled.violations(of: value).isEmpty, "\(value)")
        }
        #expect(values.filter(compiled.accepts).count == 2)
    }
}
