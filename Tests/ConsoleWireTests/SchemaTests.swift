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
}
