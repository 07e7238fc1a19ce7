import Bridge

extension ScanResults {
    /// The table, one string per line (no trailing newlines).
    var tableLines: [String] {
        let rows = sorted.map { device in
            [device.address.description, device.name ?? "-", device.rssi.map(String.init) ?? "-",
             device.uuids.map(UUIDNames.labelled).joined(separator: ", ")]
        }
        return TextTable.render(header: ["ADDRESS", "NAME", "RSSI", "SERVICES"], rows: rows, rightAligned: [2])
    }
}
