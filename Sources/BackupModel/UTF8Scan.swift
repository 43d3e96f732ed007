extension String {
    /// Whether every UTF-8 byte of the string passes `test`, read in place: the view's own
    /// `allSatisfy` and `contains` step through its index one byte at a time, which showed in
    /// the per-line work of a long script.
    public func allUTF8(_ test: (UInt8) -> Bool) -> Bool {
        utf8.withContiguousStorageIfAvailable { $0.allSatisfy(test) } ?? utf8.allSatisfy(test)
    }
}
