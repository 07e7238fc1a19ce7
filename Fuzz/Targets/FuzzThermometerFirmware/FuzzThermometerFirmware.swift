import Adverts
import AdvertsFuzzSupport
import Bluetooth
import FuzzSupport

/// pvvx and atc1441 records (service data 0x181A). Oracle: a record of the other firmware's length is not claimed,
/// and the readings stay within what their fields can hold.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzThermometerFirmware(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let bytes = input.rest()
    let broadcast = Broadcast(serviceData: [.init(uuid: BluetoothUUID(UInt16(0x181A)), bytes: bytes)])
    let pvvx = decodeTwice(broadcast, as: .pvvx)
    let atc = decodeTwice(broadcast, as: .atc)
    require(pvvx == nil || bytes.count == 15, "pvvx claimed \(bytes.count) bytes")
    require(atc == nil || bytes.count == 13, "atc claimed \(bytes.count) bytes")
    for result in [pvvx, atc].compactMap({ $0 }) {
        let temperature = result["temperature"]?.doubleValue ?? 0
        require(abs(temperature) <= 3276.8, "temperature \(temperature)")
        require((result["voltage"]?.doubleValue ?? 0) <= 65.535, "voltage")
    }
    return 0
}

@_cdecl("FuzzThermometerFirmware_main")
public func fuzzThermometerFirmwareMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzThermometerFirmware(data, size) })
}
