import ArgumentParser
import BackupModel
import ConsoleService

/// `set NAME VALUE` (also `\NAME VALUE`, as psql's `\pset`): change an output setting for the
/// rest of the session — `format table|json`, `pager on|off`, `color auto|always|never`.
/// `set` alone shows them.
struct SetCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change an output setting for this session: format, pager, color.")

    @Argument(help: "format, pager or color.") var name: String?
    @Argument(help: "format: table|json; pager: on|off; color: auto|always|never.") var value: String?

    static let names = ["format", "pager", "color"]

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        guard let name else { return Self.current(ctx.settings) }
        guard let value else { throw ConsoleError.usage("set \(name) needs a value.") }
        var settings = ctx.settings
        switch name {
        case "format":
            guard let format = OutputFormat(rawValue: value) else {
                throw ConsoleError.usage("format must be table or json, got \(value).")
            }
            settings.format = format
        case "pager":
            guard value == "on" || value == "off" else {
                throw ConsoleError.usage("pager must be on or off, got \(value).")
            }
            settings.noPager = value == "off"
        case "color":
            guard let color = ColorMode(rawValue: value) else {
                throw ConsoleError.usage("color must be auto, always or never, got \(value).")
            }
            settings.color = color
        default:
            throw ConsoleError.usage(
                "Unknown setting '\(name)'\(Suggest.didYouMean(name, among: Self.names)); settings: format, pager, color."
            )
        }
        // The executor restores per-line options after each line; a `set` is for the session.
        ctx.sessionSettings = settings
        return Self.current(settings)
    }

    static func current(_ settings: GlobalSettings) -> CommandOutput {
        let values = [
            "format": settings.format.rawValue, "pager": settings.noPager ? "off" : "on",
            "color": settings.color.rawValue,
        ]
        return CommandOutput(json: values) { style in
            keyValueBlock(names.map { ($0, values[$0] ?? "") }, style)
        }
    }
}
