import Foundation
import NIOCore
import NIOPosix

// backupctl-bench server-client …: the server suite's measuring client, a process set up as
// `backupctl --server` is (NIO's event loops run its tasks).
if CommandLine.arguments.dropFirst().first == ServerBench.clientCommand {
    _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    do {
        try await ServerBench.clientMain(Array(CommandLine.arguments.dropFirst(2)))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("server-client: \(error)\n".utf8))
        exit(1)
    }
}

// backupctl-bench [--quick] [--nio-executor] [SUITE…]: runs the suites and prints one JSON document;
// with --nio-executor, on NIO's event loops as `backupctl serve` runs its tasks.
if CommandLine.arguments.contains("--nio-executor") {
    _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}

// backupctl-bench [--quick] [SUITE…]: runs the suites and prints one JSON document.
let arguments = Array(CommandLine.arguments.dropFirst())
let scale = BenchScale(quick: arguments.contains("--quick"))
let wanted = Set(arguments.filter { !$0.hasPrefix("-") })
let selected = BenchRegistry.all.filter { wanted.isEmpty || wanted.contains($0.name) }

struct Report: Encodable {
    var machine: [String: String]
    var quick: Bool
    var suites: [String: [String: BenchValue]]
}

var results: [String: [String: BenchValue]] = [:]
for suite in selected {
    FileHandle.standardError.write(Data("running \(suite.name)…\n".utf8))
    do {
        results[suite.name] = try await suite.run(scale)
    } catch {
        results[suite.name] = ["error": .text("\(error)")]
    }
}
let report = Report(
    machine: [
        "cores": String(ProcessInfo.processInfo.activeProcessorCount),
        "os": ProcessInfo.processInfo.operatingSystemVersionString,
    ],
    quick: scale.quick, suites: results)
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
if let data = try? encoder.encode(report) {
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}
