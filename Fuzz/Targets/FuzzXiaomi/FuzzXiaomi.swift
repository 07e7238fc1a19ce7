import Adverts
import AdvertsFuzzSupport
import Bluetooth
import FuzzSupport

/// MiBeacon service data as it comes, and the same objects in a v5 frame sent plain and encrypted.
///
/// Input: selector byte (the product: an index into a few known ids), then the service data. Oracle: objects in a
/// plaintext v5 frame and in an encrypted one (`XiaomiDecoder.encrypt`) decode to the same readings.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzXiaomi(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let products: [UInt16] = [0x055B, 0x01AA, 0x0098, 0x03D6, 0x07F6, 0x0A83, 0x0387]
    let product = products[Int(input.byte()) % products.count]
    let bytes = input.rest()
    let address = BluetoothAddress("A4:C1:38:11:22:33")!
    let key: [UInt8] = Array(16..<32)
    let uuid = BluetoothUUID(UInt16(0xFE95))
    _ = decodeTwice(Broadcast(address: address, serviceData: [.init(uuid: uuid, bytes: bytes)]), as: .xiaomi)
    _ = decodeTwice(Broadcast(address: address, serviceData: [.init(uuid: uuid, bytes: bytes)]), as: .xiaomi, bindkey: key)
    _ = decodeTwice(Broadcast(serviceData: [.init(uuid: uuid, bytes: bytes)]), as: .xiaomi, bindkey: key)

    // v5, objects and address included, not encrypted: 0x5050.
    let frame: [UInt8] = [0x50, 0x50, UInt8(product & 0xFF), UInt8(product >> 8), 7] + address.bytes.reversed() + bytes
    let plain = decodeTwice(Broadcast(address: address, serviceData: [.init(uuid: uuid, bytes: frame)]), as: .xiaomi)
    guard let sealed = XiaomiDecoder.encrypt(objects: bytes, address: address, product: product, frameCounter: 7,
                                             counterExtension: [1, 2, 3], bindkey: key)
    else { return 0 }
    let encrypted = decodeTwice(Broadcast(address: address, serviceData: [.init(uuid: uuid, bytes: sealed)]),
                                as: .xiaomi, bindkey: key)
    if bytes.count >= 3 {
        require(plain?.measurements == encrypted?.measurements, "encrypted \(bytes) decodes differently")
    }
    return 0
}

@_cdecl("FuzzXiaomi_main")
public func fuzzXiaomiMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzXiaomi(data, size) })
}
