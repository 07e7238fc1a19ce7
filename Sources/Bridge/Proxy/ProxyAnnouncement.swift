import Avahi
import Glibc

/// The proxy's mDNS record as ESPHome's nodes announce theirs (`_esphomelib._tcp`), which is what Home Assistant's
/// zeroconf discovery reads: `mac` (lowercase hex, no colons) becomes the config entry's identity and must match
/// DeviceInfo's `mac_address`; `api_encryption` tells it to ask for the key.
enum ProxyAnnouncement {
    static let serviceType = "_esphomelib._tcp"

    static func service(plan: ProxyPlan, port: UInt16, encrypted: Bool, network: String = networkKind())
        -> AvahiService {
        var txt: [(key: String, value: String)] = [
            ("friendly_name", plan.identity.deviceInfo.friendlyName),
            ("version", plan.identity.deviceInfo.esphomeVersion),
            ("mac", plan.macAddress.lowercased().filter { $0 != ":" }),
            ("platform", "linux"),
            ("network", network),
            ("project_name", plan.identity.deviceInfo.projectName),
            ("project_version", plan.identity.deviceInfo.projectVersion),
        ]
        if encrypted { txt.append(("api_encryption", "Noise_NNpsk0_25519_ChaChaPoly_SHA256")) }
        return AvahiService(name: plan.settings.name, type: serviceType, port: port, txt: txt)
    }

    /// "wifi" when the interface of the default route is a wireless one (it has `/sys/class/net/IF/wireless`),
    /// "ethernet" otherwise: what ESPHome's `network` TXT says of a node.
    static func networkKind(routes: String = "/proc/net/route", sysfs: String = "/sys/class/net") -> String {
        guard let file = fopen(routes, "r") else { return "ethernet" }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let fields = text.split(whereSeparator: { $0 == "\t" || $0 == " " })
            // Iface, Destination (00000000 is the default route), …
            guard fields.count > 1, fields[1] == "00000000" else { continue }
            return access("\(sysfs)/\(fields[0])/wireless", F_OK) == 0 ? "wifi" : "ethernet"
        }
        return "ethernet"
    }
}
