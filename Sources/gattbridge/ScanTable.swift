import BridgeTools

extension ScanResults {
    /// The table, one string per line (no trailing newlines). The measurements come before the services: the
    /// services are the one column of unbounded width, so they stay last.
    var tableLines: [String] {
        let rows = sorted.map { device in
            [device.address.description, device.name ?? "-", device.rssi.map(String.init) ?? "-",
             ScanMeasurements.cell(adverts[device.path]),
             device.uuids.map(UUIDNames.labelled).joined(separator: ", ")]
        }
        return TextTable.render(header: ["ADDRESS", "NAME", "RSSI", "MEASUREMENTS", "SERVICES"], rows: rows,
                                rightAligned: [2])
    }
}
