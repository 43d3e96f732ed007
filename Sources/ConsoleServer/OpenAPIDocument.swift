/// The OpenAPI 3.1 document `GET /openapi.json` serves, kept here so it ships in the binary.
///
/// The operation paths are generated from ``ConsoleOperations``: after adding an operation,
/// run `BACKUPCTL_REGENERATE_OPENAPI=1 swift test --filter OpenAPIDocumentTests` (see that test).
enum OpenAPIDocument {
    static let json = #"""
        {
          "components" : {
            "parameters" : {
              "Tenant" : {
                "description" : "The tenant to act in (--tenant, use); without it, the operator's only tenant.",
                "in" : "header",
                "name" : "Backupctl-Tenant",
                "required" : false,
                "schema" : {
                  "type" : "string"
                }
              }
            },
            "responses" : {
              "Error" : {
                "content" : {
                  "application/json" : {
                    "schema" : {
                      "$ref" : "#/components/schemas/ErrorDocument"
                    }
                  }
                },
                "description" : "An error: 400 usage, 401 no or unknown token, 403 no role, 404 not found, 405 wrong method, 409 conflict, 422 invalid input or verification failed, 429 too many failed sign-ins, 500 internal, 502 a remote system failed, 503 not ready."
              }
            },
            "schemas" : {
              "ErrorBody" : {
                "properties" : {
                  "code" : {
                    "description" : "Stable snake_case code.",
                    "type" : "string"
                  },
                  "kind" : {
                    "enum" : [
                      "invalidInput",
                      "notFound",
                      "verificationFailed",
                      "conflict",
                      "remote",
                      "usage",
                      "permissionDenied",
                      "internalError"
                    ],
                    "type" : "string"
                  },
                  "message" : {
                    "type" : "string"
                  }
                },
                "required" : [
                  "code",
                  "kind",
                  "message"
                ],
                "type" : "object"
              },
              "ErrorDocument" : {
                "properties" : {
                  "error" : {
                    "$ref" : "#/components/schemas/ErrorBody"
                  }
                },
                "required" : [
                  "error"
                ],
                "type" : "object"
              },
              "Frame" : {
                "description" : "One line of a streamed answer: exactly one of progress, result or error.",
                "properties" : {
                  "error" : {
                    "$ref" : "#/components/schemas/ErrorBody"
                  },
                  "progress" : {
                    "$ref" : "#/components/schemas/Progress"
                  },
                  "result" : {
                    "$ref" : "#/components/schemas/Output"
                  }
                },
                "type" : "object"
              },
              "Operation" : {
                "description" : "The operation's fields as JSON (ConsoleOperation's Codable form).",
                "type" : "object"
              },
              "Output" : {
                "description" : "The operation's output as JSON (its Output's Codable form)."
              },
              "Progress" : {
                "properties" : {
                  "detail" : {
                    "type" : "string"
                  },
                  "done" : {
                    "type" : "integer"
                  },
                  "total" : {
                    "type" : "integer"
                  }
                },
                "required" : [
                  "done"
                ],
                "type" : "object"
              },
              "Status" : {
                "properties" : {
                  "status" : {
                    "type" : "string"
                  }
                },
                "required" : [
                  "status"
                ],
                "type" : "object"
              }
            },
            "securitySchemes" : {
              "bearer" : {
                "description" : "An operator token (bctl_…), stored by the server only as its SHA-256. Failed sign-ins are limited per client address (429) and audited.",
                "scheme" : "bearer",
                "type" : "http"
              }
            }
          },
          "info" : {
            "description" : "The backupctl service layer over HTTP. Every operation is POST /v1/ops/<name> with the operation as its JSON body. A plain operation answers its output (200) or an error document with the status of the error's kind. An operation that streams answers 200 with JSON lines (application/jsonl): progress frames, then one result or error frame. Regenerate the operation paths with Tests/ConsoleServerTests/OpenAPIDocumentTests.swift.",
            "title" : "backupctl serve",
            "version" : "1"
          },
          "openapi" : "3.1.0",
          "paths" : {
            "/healthz" : {
              "get" : {
                "operationId" : "healthz",
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Status"
                        }
                      }
                    },
                    "description" : "Up."
                  }
                },
                "security" : [

                ],
                "summary" : "The process is up."
              }
            },
            "/metrics" : {
              "get" : {
                "operationId" : "metrics",
                "responses" : {
                  "200" : {
                    "content" : {
                      "text/plain" : {
                        "schema" : {
                          "type" : "string"
                        }
                      }
                    },
                    "description" : "Prometheus text exposition format 0.0.4."
                  }
                },
                "security" : [

                ],
                "summary" : "Prometheus metrics: requests and durations by op and status, failed sign-ins, audit appends, cleanup progress."
              }
            },
            "/openapi.json" : {
              "get" : {
                "operationId" : "openapi",
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "type" : "object"
                        }
                      }
                    },
                    "description" : "OpenAPI 3.1."
                  }
                },
                "security" : [

                ],
                "summary" : "This document."
              }
            },
            "/readyz" : {
              "get" : {
                "operationId" : "readyz",
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Status"
                        }
                      }
                    },
                    "description" : "Ready."
                  },
                  "503" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "security" : [

                ],
                "summary" : "The store opens and answers."
              }
            },
            "/v1/ops/audit.export" : {
              "post" : {
                "operationId" : "audit.export",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run audit.export.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/audit.list" : {
              "post" : {
                "operationId" : "audit.list",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run audit.list.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/audit.verify" : {
              "post" : {
                "operationId" : "audit.verify",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run audit.verify.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/backups.ids" : {
              "post" : {
                "operationId" : "backups.ids",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run backups.ids.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/backups.list" : {
              "post" : {
                "operationId" : "backups.list",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run backups.list.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/check" : {
              "post" : {
                "operationId" : "check",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/jsonl" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Frame"
                        }
                      }
                    },
                    "description" : "JSON lines as the job runs: progress frames, then one result or error frame."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run check (a long job: progress is streamed).",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/cleanup.ingestLog" : {
              "post" : {
                "operationId" : "cleanup.ingestLog",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run cleanup.ingestLog.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/cleanup.run" : {
              "post" : {
                "operationId" : "cleanup.run",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/jsonl" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Frame"
                        }
                      }
                    },
                    "description" : "JSON lines as the job runs: progress frames, then one result or error frame."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run cleanup.run (a long job: progress is streamed).",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/cleanup.scan" : {
              "post" : {
                "operationId" : "cleanup.scan",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run cleanup.scan.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/cleanup.status" : {
              "post" : {
                "operationId" : "cleanup.status",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run cleanup.status.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/cleanup.submit" : {
              "post" : {
                "operationId" : "cleanup.submit",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run cleanup.submit.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/cleanup.teardownRequest" : {
              "post" : {
                "operationId" : "cleanup.teardownRequest",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run cleanup.teardownRequest.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/import" : {
              "post" : {
                "operationId" : "import",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/jsonl" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Frame"
                        }
                      }
                    },
                    "description" : "JSON lines as the job runs: progress frames, then one result or error frame."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run import (a long job: progress is streamed).",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/lookup" : {
              "post" : {
                "operationId" : "lookup",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run lookup.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/operator.add" : {
              "post" : {
                "operationId" : "operator.add",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run operator.add.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/operator.grant" : {
              "post" : {
                "operationId" : "operator.grant",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run operator.grant.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/operator.list" : {
              "post" : {
                "operationId" : "operator.list",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run operator.list.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/operator.remove" : {
              "post" : {
                "operationId" : "operator.remove",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run operator.remove.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/operator.token.rotate" : {
              "post" : {
                "operationId" : "operator.token.rotate",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run operator.token.rotate.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/reset.begin" : {
              "post" : {
                "operationId" : "reset.begin",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run reset.begin.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/reset.complete" : {
              "post" : {
                "operationId" : "reset.complete",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run reset.complete.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/reset.plan" : {
              "post" : {
                "operationId" : "reset.plan",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run reset.plan.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/reset.review" : {
              "post" : {
                "operationId" : "reset.review",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run reset.review.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/reset.teardown" : {
              "post" : {
                "operationId" : "reset.teardown",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run reset.teardown.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/reset.walkthrough" : {
              "post" : {
                "operationId" : "reset.walkthrough",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run reset.walkthrough.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/seed" : {
              "post" : {
                "operationId" : "seed",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/jsonl" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Frame"
                        }
                      }
                    },
                    "description" : "JSON lines as the job runs: progress frames, then one result or error frame."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run seed (a long job: progress is streamed).",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/show" : {
              "post" : {
                "operationId" : "show",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run show.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/stats" : {
              "post" : {
                "operationId" : "stats",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run stats.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/tenant.create" : {
              "post" : {
                "operationId" : "tenant.create",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/jsonl" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Frame"
                        }
                      }
                    },
                    "description" : "JSON lines as the job runs: progress frames, then one result or error frame."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run tenant.create (a long job: progress is streamed).",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/tenant.delete" : {
              "post" : {
                "operationId" : "tenant.delete",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run tenant.delete.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/tenant.list" : {
              "post" : {
                "operationId" : "tenant.list",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run tenant.list.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/tenant.retireThreshold" : {
              "post" : {
                "operationId" : "tenant.retireThreshold",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run tenant.retireThreshold.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/tenant.update" : {
              "post" : {
                "operationId" : "tenant.update",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run tenant.update.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/use" : {
              "post" : {
                "operationId" : "use",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run use.",
                "tags" : [
                  "operations"
                ]
              }
            },
            "/v1/ops/whoami" : {
              "post" : {
                "operationId" : "whoami",
                "parameters" : [
                  {
                    "$ref" : "#/components/parameters/Tenant"
                  }
                ],
                "requestBody" : {
                  "content" : {
                    "application/json" : {
                      "schema" : {
                        "$ref" : "#/components/schemas/Operation"
                      }
                    }
                  },
                  "required" : true
                },
                "responses" : {
                  "200" : {
                    "content" : {
                      "application/json" : {
                        "schema" : {
                          "$ref" : "#/components/schemas/Output"
                        }
                      }
                    },
                    "description" : "The operation's output."
                  },
                  "400" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "401" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "403" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "404" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "409" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "422" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "429" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "500" : {
                    "$ref" : "#/components/responses/Error"
                  },
                  "502" : {
                    "$ref" : "#/components/responses/Error"
                  }
                },
                "summary" : "Run whoami.",
                "tags" : [
                  "operations"
                ]
              }
            }
          },
          "security" : [
            {
              "bearer" : [

              ]
            }
          ]
        }
        """#
}
