import BackupModel
import ConsoleService
import ConsoleWire
import Foundation
import Testing

@testable import ConsoleServer

/// The document `GET /openapi.json` serves is built from the operations' own types: these
/// tests check it describes every operation the server routes and nothing else, that every
/// type was read (no schema left open), and that its wire format has no synthesised keys.
@Suite struct OpenAPIDocumentTests {
    static let document = OpenAPIDocument()

    static func parsed() throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: document.json) }

    @Test func everyTypeIsRead() {
        #expect(Self.document.failures.isEmpty, "\(Self.document.failures)")
    }

    @Test func theOperationsAreExactlyTheServers() throws {
        let paths = try Self.parsed()["paths"]?.objectValue ?? [:]
        let documented = Set(paths.keys.filter { $0.hasPrefix(Wire.opsPrefix) }.map { String($0.dropFirst(8)) })
        #expect(documented == Set(ConsoleOperations.byName.keys))
        for operation in ConsoleOperations.all {
            let post = paths[Wire.opsPrefix + operation.name]?["post"]
            #expect(post?["operationId"] == .string(operation.name))
            let ok = post?["responses"]?["200"]?["content"]?.objectValue ?? [:]
            #expect(Set(ok.keys) == [operation.streams ? Wire.jsonLines : "application/json"], "\(operation.name)")
            let statuses = Set((post?["responses"]?.objectValue ?? [:]).keys)
            #expect(statuses.isSuperset(of: ["200", "400", "401", "403", "413", "415", "422", "429"]))
            // Every request and answer has a real schema: a $ref to a component with properties or a union.
            let request = post?["requestBody"]?["content"]?["application/json"]?["schema"]?["$ref"]?.stringValue
            #expect(request != nil, "\(operation.name) has no request schema")
        }
    }

    @Test func everyComponentIsTypedAndTheWireHasNoSynthesisedKeys() throws {
        let schemas = try Self.parsed()["components"]?["schemas"]?.objectValue ?? [:]
        for (name, schema) in schemas where name != "JSONValue" {
            let typed = schema["type"] != nil || schema["oneOf"] != nil || schema["anyOf"] != nil
            #expect(typed, "\(name) has no type: \(schema)")
        }
        let text = String(decoding: Self.document.json, as: UTF8.self)
        #expect(!text.contains(#""_0""#) && !text.contains(#""_1""#))
        // Objects read from types refuse what they do not know (the server refuses it too).
        let show = try #require(schemas["ShowOperation"])
        #expect(show["additionalProperties"] == false && show["required"] == ["backupId"])
    }

    @Test func everyOperationsFieldlessBodyIsJudgedByItsSchema() throws {
        let validator = Self.document.validator
        // whoami takes no field: {} passes, 42 and an unknown field do not.
        let whoami = try #require(Self.document.requests["whoami"])
        #expect(validator.violations(of: [:], against: whoami).isEmpty)
        #expect(!validator.violations(of: 42, against: whoami).isEmpty)
        #expect(!validator.violations(of: ["x": 1], against: whoami).isEmpty)
        // lookup is a tagged union: each kind with its own fields.
        let lookup = try #require(Self.document.requests["lookup"])
        let good: JSONValue = ["query": ["kind": "passkey", "credentialId": "abc"]]
        #expect(validator.violations(of: good, against: lookup).isEmpty)
        let wrong: JSONValue = ["query": ["kind": "passkey", "publicKey": "abc"]]
        #expect(!validator.violations(of: wrong, against: lookup).isEmpty)
    }

    @Test func theRequestsTheClientSendsConformToTheDocument() throws {
        let samples: [any ConsoleOperation] = [
            LookupOperation(.keypair(publicKey: "AAAA", sync: true)),
            LookupOperation(.oidc(provider: "google", sub: "1")),
            ShowOperation(backupId: "x"), WhoamiOperation(), StatsOperation(), UseOperation(tenant: "t"),
            CleanupRunOperation(execute: true, max: 5, concurrency: 2, graceSeconds: nil, confirmed: true),
            CleanupStatusOperation(states: ["failed"], reason: nil, limit: 3),
        ]
        for sample in samples {
            let name = type(of: sample).name
            let value = try JSONDecoder().decode(JSONValue.self, from: try Wire.encoder().encode(sample))
            let schema = try #require(Self.document.requests[name])
            #expect(Self.document.validator.violations(of: value, against: schema) == [], "\(name): \(value)")
        }
    }
}
