import BlueZ
import Bluetooth
import BridgeFeatureHost
import BridgeModel
import BridgeTools
import Codecs
import Config
import MQTT

/// Serving the bridge API's requests (docs/bridge-api.md): the listing and `health` from the read model, device
/// changes through the core and saved as drop-ins, re-arming through the adverts feature, and the long scans and
/// inspections through BlueZ. Which requests are served, and where they are answered, the machine decides.
extension BridgeAPIFeature {
    /// A request answered at once (the machine decided it is this bridge's to serve); `machine` as it was then.
    func serve(_ request: BridgeRequest, machine: BridgeAPIMachine, context: FeatureContext) async -> String {
        let transaction = request.transaction
        switch request.parameters {
        case .none where request.verb == .devices:
            guard let listing = await devicesJSON(machine, context: context) else {
                return BridgeResponse.error("the bridge is stopping", transaction: transaction)
            }
            return BridgeResponse.ok(listing, transaction: transaction)
        case .none:
            guard let state = context.state else {
                return BridgeResponse.error("the bridge is stopping", transaction: transaction)
            }
            return BridgeResponse.ok(health(state, bridge: machine.fleet?.id), transaction: transaction)
        case .device(let object):
            return await add(object, transaction: transaction, context: context)
        case .name(let name) where request.verb == .deviceRearm:
            return await rearm(name, transaction: transaction, context: context)
        case .name(let name):
            return await remove(name, transaction: transaction, context: context)
        case .scan, .address:
            return BridgeResponse.error("internal: long request served inline", transaction: transaction)
        }
    }

    /// The drop-in goes first, then the device: a reload between the two reads the files without it and stops the
    /// device itself, and the core's answer to the change that follows is then "unknown device", which is this
    /// removal done. A drop-in that cannot be deleted leaves the device running.
    func remove(_ name: String, transaction: JSONValue?, context: FeatureContext) async -> String {
        guard let config = await context.currentConfig() else {
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        if case .failure(let error) = DeviceChange.remove(name: name).applied(to: config) {
            return BridgeResponse.error(error.description, transaction: transaction)
        }
        guard let device = config.devices.first(where: { $0.name == name }) else {
            return BridgeResponse.error(DeviceChangeError.unknownDevice(name).description, transaction: transaction)
        }
        do throws(DropInStore.Failure) {
            // An auto device (docs/adverts.md) was never saved: nothing to delete.
            if device.source.kind != .advert { try DropInStore.delete(device.source.file) }
        } catch {
            logger.error("device \(device.name) not removed: its drop-in stays: \(error)")
            return BridgeResponse.error("device \(device.name) not removed: \(error)", transaction: transaction)
        }
        switch await context.updateDevices(.remove(name: name)) {
        case nil:
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        case .failure(.unknownDevice)?, .success?:
            logger.notice("device \(device.name) removed over the bridge API")
            return BridgeResponse.ok(.object([]), transaction: transaction)
        case .failure(let error)?:
            return BridgeResponse.error(error.description, transaction: transaction)
        }
    }

    /// A passive device whose encryption counter went back (a new battery): its next counter is believed
    /// (docs/adverts.md, "Re-arming"). The adverts feature does it; any device that decodes broadcasts may be named.
    func rearm(_ name: String, transaction: JSONValue?, context: FeatureContext) async -> String {
        guard let config = await context.currentConfig() else {
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        guard let device = config.devices.first(where: { $0.name == name }) else {
            return BridgeResponse.error(DeviceChangeError.unknownDevice(name).description, transaction: transaction)
        }
        guard device.advert != nil else {
            return BridgeResponse.error("device \(device.name) has no advert: it has no broadcasts to re-arm",
                                        transaction: transaction)
        }
        context.rearm(device)
        logger.notice("device \(device.name) re-armed over the bridge API")
        return BridgeResponse.ok(.object([]), transaction: transaction)
    }

    func add(_ object: JSONValue, transaction: JSONValue?, context: FeatureContext) async -> String {
        guard let config = await context.currentConfig() else {
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        let name = object["name"]?.stringValue ?? ""
        let path = DropInStore.path(for: name.isEmpty ? "device" : name, stateDir: config.stateDir)
        let device: DeviceConfig
        do throws(ConfigErrors) {
            // An auto device (docs/adverts.md) is adopted by a device/add of its address: it is not in the way.
            let existing = config.devices.filter { $0.source.kind != .advert }
            device = try ConfigLoader.validateDevice(json: object, file: path, existing: existing,
                                                     adapters: config.bluetooth.adapters, secretsDir: config.secretsDir)
        } catch {
            return BridgeResponse.error(error.issues.map(\.description).joined(separator: "; "), transaction: transaction)
        }
        do throws(DropInStore.Failure) {
            try DropInStore.save(DropInStore.text(of: object), to: path)
        } catch {
            return BridgeResponse.error("cannot save the device: \(error)", transaction: transaction)
        }
        guard let result = await context.updateDevices(.add(device)) else {
            try? DropInStore.delete(path)
            return BridgeResponse.error("the bridge is stopping", transaction: transaction)
        }
        if case .failure(let error) = result {
            try? DropInStore.delete(path)
            return BridgeResponse.error(error.description, transaction: transaction)
        }
        logger.notice("device \(device.name) added over the bridge API", metadata: ["file": "\(path)"])
        return BridgeResponse.ok(object.secretsRedacted, transaction: transaction)
    }

    /// A scan or inspection, on a child task of the feature: they take seconds, and other requests are answered
    /// meanwhile.
    func long(_ long: BridgeAPIMachine.LongRequest) async -> String {
        let request = long.request, requester = long.requester
        let transaction = request.transaction
        guard let adapter = await bluetooth.poweredAdapter(long.adapter) else {
            return BridgeResponse.error("no powered Bluetooth adapter", transaction: transaction)
        }
        switch request.parameters {
        case .scan(let duration, let services):
            let results = await bluetooth.scan(adapter: adapter, services: services, duration: duration,
                                               requester: requester)
            return BridgeResponse.ok(results.json, transaction: transaction)
        case .address(let address):
            do throws(DeviceTools.InspectFailure) {
                let report = try await bluetooth.inspect(adapter: adapter, address: address,
                                                         timeout: Self.inspectTimeout, requester: requester)
                return BridgeResponse.ok(report.json, transaction: transaction)
            } catch {
                switch error {
                case .notFound(let message), .failed(let message):
                    return BridgeResponse.error(message, transaction: transaction)
                }
            }
        default:
            return BridgeResponse.error("internal: not a long request", transaction: transaction)
        }
    }
}

extension JSONValue {
    /// A device object as the bridge API echoes it: an inline `passkey` or `bindkey` shows as `<redacted>`
    /// (docs/pairing.md, docs/adverts.md: secrets never reach MQTT; the drop-in on disk keeps them).
    var secretsRedacted: JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(members.map { $0.0 == "passkey" || $0.0 == "bindkey" ? ($0.0, .string("<redacted>")) : $0 })
    }
}
