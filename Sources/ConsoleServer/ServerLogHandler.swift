import Logging

/// Logs to stderr as `StreamLogHandler` does, but keeps metadata as a plain dictionary until
/// a line is written. Hummingbird sets request metadata on every request's logger, and
/// `StreamLogHandler` formats its metadata on every such change, though at the server's level
/// almost no request logs anything.
public struct ServerLogHandler: LogHandler {
    private var output: StreamLogHandler
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .notice

    public static func standardError(label: String) -> ServerLogHandler {
        ServerLogHandler(output: StreamLogHandler.standardError(label: label))
    }

    private init(output: StreamLogHandler) { self.output = output }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var output = output
        output.logLevel = logLevel
        output.metadataProvider = metadataProvider
        output.metadata = metadata
        output.log(event: event)
    }
}
