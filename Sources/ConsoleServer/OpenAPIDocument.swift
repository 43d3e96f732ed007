import BackupModel
import ConsoleService
import ConsoleWire
import Foundation

/// The OpenAPI 3.1 document `GET /openapi.json` serves, built at start from the operations
/// themselves: each request and response schema is read from the Swift type the server
/// decodes or encodes (``SchemaProbe``), so the document cannot say what the server does not do.
///
/// The same schemas check every request body before it is decoded (``requestValidator``):
/// a body the document refuses is refused by the server, with the same words.
struct OpenAPIDocument: Sendable {
    /// The document as JSON (sorted keys).
    let json: Data
    /// The request and output schema of each operation, by name (they refer to the components).
    let requests: [String: JSONValue]
    let outputs: [String: JSONValue]
    let validator: SchemaValidator
    /// ``requests`` and ``outputs`` compiled once, for the checks of every request and answer.
    let requestChecks: [String: CompiledSchema]
    let outputChecks: [String: CompiledSchema]
    /// Types whose schema could not be read (the tests require none).
    let failures: [String: String]

    /// The statuses every operation may answer besides 200, and why.
    static let errorStatuses: [(Int, String)] = [
        (400, "The body is not JSON, or not the operation's schema (usage)."),
        (401, "No operator token, or an unknown, revoked or rotated one."),
        (403, "The token has no role for this in the tenant."),
        (404, "Not found."),
        (409, "Conflicts with the current state."),
        (413, "The body is over 1 MiB."),
        (415, "The body is not application/json."),
        (422, "Invalid input, or a proof that did not verify."),
        (429, "Too many failed sign-ins from this address; see Retry-After."),
        (500, "Internal error."),
        (502, "A remote system (Turnkey, the Backup Service, PostgreSQL) failed."),
        (503, "The store is not ready."),
    ]

    init(operations: [any ConsoleOperation.Type] = ConsoleOperations.all) {
        let registry = SchemaRegistry()
        var paths: [String: JSONValue] = [:]
        var requests: [String: JSONValue] = [:]
        var outputs: [String: JSONValue] = [:]
        for operation in operations {
            let (path, request, output) = Self.path(operation, registry)
            paths[Wire.opsPrefix + operation.name] = path
            requests[operation.name] = request
            outputs[operation.name] = output
        }
        for (route, summary, schema, type) in Self.plainRoutes {
            var responses: [String: JSONValue] = [
                "200": ["description": "OK", "content": [type: ["schema": schema]]]
            ]
            // Not ready: the error document, with Retry-After.
            if route == "/readyz" { responses["503"] = ["$ref": "#/components/responses/Error"] }
            paths[route] = [
                "get": [
                    "operationId": .string(String(route.dropFirst()).replacingOccurrences(of: ".json", with: "")),
                    "summary": .string(summary), "security": [], "responses": .object(responses),
                ]
            ]
        }
        let errorDocument = registry.reference(Wire.ErrorDocument.self)
        var components = registry.components
        components["Status"] = .object(["status": .stringType], required: ["status"])
        let document: JSONValue = [
            "openapi": "3.1.0",
            "info": [
                "title": "backupctl serve", "version": "2",
                "description": .string(Self.description),
            ],
            "security": [["bearer": []]],
            "paths": .object(paths),
            "components": [
                "schemas": .object(components),
                "securitySchemes": [
                    "bearer": [
                        "type": "http", "scheme": "bearer",
                        "description":
                            "An operator token (bctl_…). The server keeps only its SHA-256; failed sign-ins are limited per address (429 with Retry-After) and audited.",
                    ]
                ],
                "parameters": [
                    "Tenant": [
                        "name": .string(Wire.tenantHeader), "in": "header", "required": false,
                        "schema": .stringType,
                        "description": "The tenant to act in (--tenant, use); without it, the operator's only tenant.",
                    ],
                    "RequestId": [
                        "name": "X-Request-Id", "in": "header", "required": false,
                        "schema": .stringType,
                        "description":
                            "Echoed in the answer, the server's log and the audit entries of the request when it is 1–128 of A-Za-z0-9._:-; otherwise (or when absent) the server makes one.",
                    ],
                ],
                "responses": [
                    "Error": [
                        "description": "An error document: its code, kind and one sentence.",
                        "content": ["application/json": ["schema": errorDocument]],
                    ]
                ],
            ],
        ]
        json = (try? Wire.encoder().encode(document)) ?? Data("{}".utf8)
        self.requests = requests
        self.outputs = outputs
        validator = SchemaValidator(components: components)
        requestChecks = requests.mapValues(validator.compile)
        outputChecks = outputs.mapValues(validator.compile)
        failures = registry.failures
    }

    /// `POST /v1/ops/NAME`: the operation's body, its 200 (JSON, or JSON lines of frames) and its errors.
    private static func path(_ operation: any ConsoleOperation.Type, _ registry: SchemaRegistry) -> (
        JSONValue, JSONValue, JSONValue
    ) {
        func describe<Op: ConsoleOperation>(_ op: Op.Type) -> (JSONValue, JSONValue, JSONValue) {
            let request = registry.reference(Op.self)
            let output = registry.reference(Op.Output.self)
            let success: JSONValue
            if Op.streams {
                let frame = SchemaRegistry.name(of: Op.self) + "Frame"
                registry.add(
                    frame,
                    [
                        "description":
                            "One line of the stream: a progress frame, then exactly one result or error frame.",
                        "type": "object", "additionalProperties": false, "minProperties": 1, "maxProperties": 1,
                        "properties": [
                            "progress": registry.reference(ProgressEvent.self), "result": output,
                            "error": registry.reference(Wire.ErrorBody.self),
                        ],
                    ])
                success = [
                    "description":
                        "Accepted and running: JSON lines (one frame each) until the result or error frame. A request the server refuses (its body, its token, its role, its input) is answered with that status and an error document before any line.",
                    "content": [Wire.jsonLines: ["schema": SchemaRegistry.reference(named: frame)]],
                ]
            } else {
                success = [
                    "description": "The operation's output.", "content": ["application/json": ["schema": output]],
                ]
            }
            var responses: [String: JSONValue] = ["200": success]
            for (status, _) in errorStatuses { responses[String(status)] = ["$ref": "#/components/responses/Error"] }
            let post: JSONValue = [
                "operationId": .string(Op.name),
                "summary": .string(
                    Op.streams ? "Run the long job \(Op.name), streaming its progress." : "Run \(Op.name)."),
                "tags": [Op.streams ? "jobs" : "operations"],
                "parameters": [
                    ["$ref": "#/components/parameters/Tenant"], ["$ref": "#/components/parameters/RequestId"],
                ],
                "requestBody": ["required": true, "content": ["application/json": ["schema": request]]],
                "responses": .object(responses),
            ]
            return (["post": post], request, output)
        }
        return describe(operation)
    }

    private static let plainRoutes: [(String, String, JSONValue, String)] = [
        ("/healthz", "The process is up.", SchemaRegistry.reference(named: "Status"), "application/json"),
        (
            "/readyz", "The store answered its last check (every 0.5 s) and, with an audit key, the signer can sign.",
            SchemaRegistry.reference(named: "Status"), "application/json"
        ),
        ("/metrics", "Prometheus metrics (text format 0.0.4).", .stringType, "text/plain"),
        ("/openapi.json", "This document.", ["type": "object"], "application/json"),
    ]

    private static let description = """
        The backupctl service layer over HTTP. Every operation is `POST /v1/ops/NAME` with the operation's \
        fields as a JSON object (application/json). A plain operation answers 200 with its output, or an \
        error document `{"error": {"code", "kind", "message"}}` with the status of the error's kind. A long \
        job answers 200 with JSON lines (application/jsonl) once it runs: `{"progress": {…}}` frames, then one \
        `{"result": …}` or `{"error": {…}}` frame; a request refused before it runs gets its real status. \
        Every answer carries `Cache-Control: no-store` and `X-Request-Id`. The schemas are read from the \
        server's own types when it starts.
        """
}
