/// Every suite `make bench` runs, in order. Add a suite here (one line) when you add its file.
enum BenchRegistry {
    static let all: [any BenchSuite] = [
        FoundationBench(),
        InspectBench(),
        RecoveryBench(),
        ConsoleBench(),
        CleanupBench(),
        SimulationBench(),
        ServerBench(),
        ThroughputBench(),
        PostgresBench(),
        PostgresLookupBench(),
        PostgresWorkersBench(),
        SeedBench(),
        SQLiteImportBench(),
    ]
}
