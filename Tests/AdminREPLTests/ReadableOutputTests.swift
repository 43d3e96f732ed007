import BackupModel
import Foundation
import Testing

@testable import AdminREPL

/// Table-mode numbers and times, and the YAML and CSV writers.
@Suite struct ReadableOutputTests {
    @Test(arguments: [
        (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1_258_291, "1.2 MiB"), (15_728_640, "15.0 MiB"),
        (5 << 30, "5.0 GiB"),
    ])
    func sizesUseBinaryUnits(_ bytes: Int, _ text: String) {
        #expect(Readable.bytes(bytes) == text)
    }

    @Test func timesShowUTCAndTheLocalZoneBesideIt() async throws {
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        let utc = try #require(TimeZone(identifier: "UTC"))
        let march = Int64(1_772_442_900)  // 2026-03-02 09:15 UTC
        #expect(Readable.time(march, zone: utc) == "2026-03-02 09:15 UTC")
        let local = Readable.time(march, zone: berlin)
        #expect(local.hasPrefix("2026-03-02 09:15 UTC (10:15 "), "\(local)")
        // Across midnight the local date is shown too.
        let lateEvening = Int64(1_772_492_400)  // 2026-03-02 23:00 UTC
        #expect(Readable.time(lateEvening, zone: berlin).hasPrefix("2026-03-02 23:00 UTC (2026-03-03 00:00 "))
    }

    @Test func numericCellsAreRightAligned() {
        let table = TextTable(["NAME", "COUNT", "SIZE"], [["a", "7", "1.2 MiB"], ["bb", "1234", "512 B"]])
        let lines = table.render(RenderStyle(color: false, width: nil)).split(separator: "\n").map(String.init)
        #expect(lines == ["NAME  COUNT     SIZE", "a         7  1.2 MiB", "bb     1234    512 B"])
        #expect(Readable.isNumeric("-3") && Readable.isNumeric("12%") && !Readable.isNumeric("5+"))
        #expect(!Readable.isNumeric("backup_account_03") && !Readable.isNumeric(""))
    }

    @Test func durationsParseWithUnitsAndRejectTheRest() async throws {
        #expect(try Readable.duration("90", option: "--x") == 90)
        #expect(try Readable.duration("30d", option: "--x") == 30 * 86_400)
        #expect(try Readable.duration("2w", option: "--x") == 14 * 86_400)
        for bad in ["", "d", "-1d", "1y", "99999999999d"] {
            #expect(throws: ConsoleError.self) { try Readable.duration(bad, option: "--x") }
        }
    }

    @Test func yamlQuotesWhatWouldReadBackAsSomethingElse() {
        struct Doc: Encodable {
            var name = "sandbox"
            var flag = "true"
            var number = "42"
            var empty = ""
            var colon = "a: b"
            var items = [1, 2]
            var none: [String] = []
            var nested = ["k": "v"]
            var ok = true
        }
        let yaml = StructuredOutput.yaml(Doc())
        #expect(
            yaml == """
                colon: "a: b"
                empty: ""
                flag: "true"
                items:
                  - 1
                  - 2
                name: sandbox
                nested:
                  k: v
                none: []
                number: "42"
                ok: true
                """)
    }

    @Test func csvEscapesSeparatorsAndDefusesFormulas() {
        let csv = StructuredOutput.csv(
            ListRecords(["a", "b"], [["x,y", "say \"hi\""], ["=SUM(A1)", "-5"], ["-x", "line\nbreak"]]))
        // A line break in a value is escaped like any control character: one row stays one line.
        #expect(csv == "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n'=SUM(A1),-5\n'-x,line\\nbreak")
    }
}
