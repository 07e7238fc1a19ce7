import Adverts
import AdvertsFuzzSupport
import Bluetooth
import FuzzSupport

/// iBeacon (Apple manufacturer data) and Eddystone (service data 0xFEAA) from the same bytes, and the dispatcher
/// over every format with all of them present at once. Oracle: an iBeacon always has its UUID; the
/// dispatcher's answer is one of the single formats' answers.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBeacons(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let bytes = input.rest()
    let ibeacon = decodeTwice(Broadcast(manufacturerData: [.init(company: 0x004C, bytes: bytes)]), as: .ibeacon)
    if let ibeacon { require(ibeacon["uuid"] != nil, "iBeacon without UUID") }
    _ = decodeTwice(Broadcast(serviceData: [.init(uuid: BluetoothUUID(UInt16(0xFEAA)), bytes: bytes)]), as: .eddystone)

    let everything = Broadcast(
        address: BluetoothAddress("A4:C1:38:11:22:33"), name: "GVH5075_1234",
        serviceData: [0xFCD2, 0xFE95, 0x181A, 0xFEAA].map { .init(uuid: BluetoothUUID(UInt16($0)), bytes: bytes) },
        manufacturerData: [0x0499, 0xEC88, 0x004C].map { .init(company: UInt16($0), bytes: bytes) })
    if let any = try? AdvertDecoder.decode(everything) {
        checkResult(any, "any")
        require(any == (try? AdvertDecoder.decode(everything, as: any.format)), "dispatcher disagrees with \(any.format)")
    }
    return 0
}

@_cdecl("FuzzBeacons_main")
public func fuzzBeaconsMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzBeacons(data, size) })
}
