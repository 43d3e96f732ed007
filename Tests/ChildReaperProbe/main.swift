import BackupctlTestSupport
import Foundation

// The reaper test's stand-in for a test process: starts the children named on the command line
// (each argument one `/bin/sh -c` line) through ChildProcess, prints their pids as one JSON line,
// then waits to be killed. The test SIGKILLs it and checks that none of them outlives it.
var children: [ChildProcess] = []
for line in CommandLine.arguments.dropFirst() {
    children.append(try ChildProcess.start("/bin/sh", ["-c", line], environment: ["PATH": "/usr/bin:/bin"]))
}
let pids = children.map { String($0.pid) }.joined(separator: ",")
FileHandle.standardOutput.write(Data("{\"pids\":[\(pids)]}\n".utf8))
while true { sleep(3600) }
