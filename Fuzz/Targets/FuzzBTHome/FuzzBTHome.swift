import Adverts
import AdvertsFuzzSupport
import Bluetooth
import FuzzSupport

/// BTHome service data as it comes, and the same objects sent encrypted.
///
/// Input: the service data. Oracle: a plaintext v2 packet (info byte 0x40) and the same objects encrypted with a key
/// (`BTHomeDecoder.encrypt`) decode to the same readings, events and packet id.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBTHome(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let bytes = input.rest()
    let address = BluetoothAddress("A4:C1:38:8D:18:B2")!
    let key: [UInt8] = Array(0..<16)
    let plain = Broadcast(address: address, serviceData: [.init(uuid: BluetoothUUID(UInt16(0xFCD2)), bytes: bytes)])
    let decoded = decodeTwice(plain, as: .bthome)
    _ = decodeTwice(plain, as: .bthome, bindkey: key)

    let objects = Array(bytes.dropFirst())
    guard bytes.first == 0x40,
          let sealed = BTHomeDecoder.encrypt(objects: objects, address: address, bindkey: key, counter: 0x1234_5678)
    else { return 0 }
    let encrypted = Broadcast(address: address, serviceData: [.init(uuid: BluetoothUUID(UInt16(0xFCD2)), bytes: sealed)])
    let again = decodeTwice(encrypted, as: .bthome, bindkey: key)
    if objects.count >= 2 {
        require(again?.measurements == decoded?.measurements && again?.events == decoded?.events
                && again?.packetID == decoded?.packetID, "encrypted \(objects) decodes differently")
        if decoded != nil { require(again?.encryptionCounter == 0x1234_5678, "counter lost") }
    }
    return 0
}

@_cdecl("FuzzBTHome_main")
public func fuzzBTHomeMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzBTHome(data, size) })
}
