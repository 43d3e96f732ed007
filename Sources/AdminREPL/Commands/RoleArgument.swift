import ArgumentParser
import BackupModel

/// `--role viewer|support|cleaner|admin`: parsed by ArgumentParser; a bad value keeps its own
/// `invalid_role` code, message and exit status (``ArgumentFailure``).
extension Role: ExpressibleByArgument {
    public init?(argument: String) {
        do {
            try self.init(name: argument)
        } catch {
            ArgumentFailure.record(error)
            return nil
        }
    }

    public var defaultValueDescription: String { name }
    public static var allValueStrings: [String] { allCases.map(\.name) }
}
