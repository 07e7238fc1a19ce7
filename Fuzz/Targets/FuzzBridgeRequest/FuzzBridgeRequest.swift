import Bluetooth
import Codecs
import FuzzSupport
@testable import BridgeModel
@testable import Config

/// A bridge API request (docs/bridge-api.md): the first byte picks the verb (or an unknown one), the rest is the payload. Parsing
/// must never crash and every refusal must say why; a `device/add` body goes through the config validator, whose
/// errors must all carry a JSON path, and a device it accepts must read back identically from the drop-in text the
/// bridge would save (JSON that must also be YAML).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBridgeRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let verbs = BridgeRequest.Verb.allCases.map(\.rawValue) + ["", "device", "nope/x"]
    let verb = verbs[Int(input.byte()) % verbs.count]
    let payload = Array(input.rest())
    switch BridgeRequest.parse(verb: verb, payload: payload) {
    case .failure(let failure):
        require(!failure.message.isEmpty, "a refused request without a message")
        _ = BridgeResponse.error(failure.message, transaction: failure.transaction)
    case .success(let request):
        require(request.verb.rawValue == verb, "verb \(verb) parsed as \(request.verb)")
        if case .device(let object) = request.parameters {
            validate(object)
        }
        _ = BridgeResponse.ok(.null, transaction: request.transaction)
    }
    return 0
}

private let existing = DeviceConfig(name: "taken", address: BluetoothAddress("C0:FF:EE:00:00:01")!, channels: [])

private func validate(_ object: JSONValue) {
    let file = "/var/lib/gattbridge/devices.d/fuzz.yaml"
    do throws(ConfigErrors) {
        let device = try ConfigLoader.validateDevice(json: object, file: file, existing: [existing])
        require(!device.channels.isEmpty, "device \(device.name) accepted without channels")
        require(device.topicLevel != "bridge" && device.topicLevel != existing.topicLevel, "topic level \(device.topicLevel) accepted")
        require(device.address != existing.address, "a taken address accepted")
        let text = DropInStore.text(of: object)
        var registry = DeviceRegistry()
        do throws(ConfigErrors) {
            let reread = try ConfigLoader.parseDropIn(text, file: file, registry: &registry)
            require(reread == device, "the saved drop-in reads back as a different device:\n\(text)")
        } catch {
            require(false, "the saved drop-in does not load: \(error)\n\(text)")
        }
    } catch {
        require(!error.issues.isEmpty, "a refused device reported no issue")
        for issue in error.issues {
            require(issue.path != nil, "an issue of a JSON device without a JSON path: \(issue)")
            require(!issue.description.isEmpty, "an empty issue")
        }
    }
}

@_cdecl("FuzzBridgeRequest_main")
public func fuzzBridgeRequestMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzBridgeRequest(data, size) })
}
