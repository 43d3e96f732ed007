// The OpenAPI document served at /openapi.json lives in Sources/ConsoleServer/OpenAPIDocument.swift.
// Its operation paths (/v1/ops/<name>) must match ConsoleOperations.all exactly. After adding an
// operation, or merging branches that did, refresh them from the registry with
//
//     BACKUPCTL_REGENERATE_OPENAPI=1 swift test --filter OpenAPIDocumentTests
//
// which rewrites the operation paths of that file (everything else in the document is kept) and
// then checks it like any other run. Commit the rewritten file.

import ConsoleService
import Foundation
import Testing

@testable import ConsoleServer

@Suite struct OpenAPIDocumentTests {
    static let regenerating = ProcessInfo.processInfo.environment["BACKUPCTL_REGENERATE_OPENAPI"] == "1"

    static var sourceFile: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/ConsoleServer/OpenAPIDocument.swift")
    }

    /// Rewrites the document's operation paths from the registry (only when asked to).
    @Test(.enabled(if: regenerating)) func regenerate() throws {
        let source = try String(contentsOf: Self.sourceFile, encoding: .utf8)
        let rewritten = try OpenAPIPaths.regenerate(source: source)
        if rewritten != source { try rewritten.write(to: Self.sourceFile, atomically: true, encoding: .utf8) }
    }

    /// The paths of the source file (freshly regenerated when asked) or of the compiled-in document.
    func document() throws -> [String: Any] {
        let text: String
        if Self.regenerating {
            text = try OpenAPIPaths.regenerate(source: try String(contentsOf: Self.sourceFile, encoding: .utf8))
        } else {
            text = OpenAPIDocument.json
        }
        return try OpenAPIPaths.parse(OpenAPIPaths.extractJSON(text) ?? text)
    }

    @Test func everyOperationHasItsPathAndNothingElse() throws {
        let paths = try #require(try document()["paths"] as? [String: Any])
        let documented = Set(paths.keys.filter { $0.hasPrefix(Wire.opsPrefix) }.map { String($0.dropFirst(8)) })
        let registered = Set(ConsoleOperations.all.map { $0.name })
        #expect(documented == registered, "regenerate: see the comment at the top of this file")
        for operation in ConsoleOperations.all {
            let item = paths[Wire.opsPrefix + operation.name] as? [String: Any]
            let post = item?["post"] as? [String: Any]
            #expect(post?["operationId"] as? String == operation.name)
            let ok = (post?["responses"] as? [String: Any])?["200"] as? [String: Any]
            let types = Set(((ok?["content"] as? [String: Any]) ?? [:]).keys)
            #expect(types == [operation.streams ? Wire.jsonLines : "application/json"], "\(operation.name)")
            let parameters = post?["parameters"] as? [[String: Any]]
            #expect(parameters?.contains { $0["$ref"] as? String == "#/components/parameters/Tenant" } == true)
        }
    }

    @Test func describesSecurityErrorsAndTheOtherRoutes() throws {
        let document = try document()
        #expect(document["openapi"] as? String == "3.1.0")
        let components = try #require(document["components"] as? [String: Any])
        let bearer = (components["securitySchemes"] as? [String: Any])?["bearer"] as? [String: Any]
        #expect(bearer?["scheme"] as? String == "bearer")
        let tenant = (components["parameters"] as? [String: Any])?["Tenant"] as? [String: Any]
        #expect(tenant?["name"] as? String == Wire.tenantHeader)
        let schemas = try #require(components["schemas"] as? [String: Any])
        #expect(schemas["ErrorDocument"] != nil && schemas["Frame"] != nil)
        let paths = try #require(document["paths"] as? [String: Any])
        for route in ["/healthz", "/readyz", "/metrics", "/openapi.json"] { #expect(paths[route] != nil, "\(route)") }
    }
}

/// Generates the operation paths of the OpenAPI document from ``ConsoleOperations``.
enum OpenAPIPaths {
    static let opening = "static let json = #\"\"\"\n"
    static let closing = "\"\"\"#"

    /// Where the JSON of ``OpenAPIDocument`` sits in its Swift source, and the indentation of
    /// its lines (that of the closing delimiter, as swift-format leaves it).
    static func locate(_ source: String) throws -> (range: Range<String.Index>, indentation: String) {
        guard let start = source.range(of: opening),
            let end = source.range(of: closing, range: start.upperBound..<source.endIndex),
            let newline = source[start.upperBound..<end.lowerBound].lastIndex(of: "\n")
        else { throw CocoaError(.propertyListReadCorrupt) }
        let indentation = String(source[source.index(after: newline)..<end.lowerBound])
        return (start.upperBound..<newline, indentation)
    }

    /// The JSON inside the Swift source of ``OpenAPIDocument``.
    static func extractJSON(_ source: String) -> String? {
        guard let (range, _) = try? locate(source) else { return nil }
        return String(source[range])
    }

    static func parse(_ json: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else {
            throw CocoaError(.propertyListReadCorrupt)
        }
        return object
    }

    /// The source with its operation paths replaced by those of the registry.
    static func regenerate(source: String) throws -> String {
        let (range, indentation) = try locate(source)
        var document = try parse(String(source[range]))
        var paths = (document["paths"] as? [String: Any] ?? [:]).filter { !$0.key.hasPrefix(Wire.opsPrefix) }
        for operation in ConsoleOperations.all {
            paths[Wire.opsPrefix + operation.name] = pathItem(name: operation.name, streams: operation.streams)
        }
        document["paths"] = paths
        let data = try JSONSerialization.data(
            withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        let json = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.isEmpty ? "" : indentation + $0 }.joined(separator: "\n")
        return source.replacingCharacters(in: range, with: json)
    }

    static func pathItem(name: String, streams: Bool) -> [String: Any] {
        let error = ["$ref": "#/components/responses/Error"]
        let ok: [String: Any] =
            streams
            ? [
                "description": "JSON lines as the job runs: progress frames, then one result or error frame.",
                "content": [Wire.jsonLines: ["schema": ["$ref": "#/components/schemas/Frame"]]],
            ]
            : [
                "description": "The operation's output.",
                "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Output"]]],
            ]
        var responses: [String: Any] = ["200": ok]
        for status in ["400", "401", "403", "404", "409", "422", "429", "500", "502"] { responses[status] = error }
        return [
            "post": [
                "operationId": name,
                "summary": streams ? "Run \(name) (a long job: progress is streamed)." : "Run \(name).",
                "tags": ["operations"],
                "parameters": [["$ref": "#/components/parameters/Tenant"]],
                "requestBody": [
                    "required": true,
                    "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Operation"]]],
                ],
                "responses": responses,
            ] as [String: Any]
        ]
    }
}
