import Adverts
import AdvertsFuzzSupport
import FuzzSupport

/// RuuviTag manufacturer data (0x0499). Oracle: only 24-byte format 5 records decode, each with its sequence number.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRuuvi(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let bytes = input.rest()
    let result = decodeTwice(Broadcast(manufacturerData: [.init(company: 0x0499, bytes: bytes)]), as: .ruuvi)
    if result != nil {
        require(bytes.count == 24 && bytes[0] == 5, "decoded \(bytes.count) bytes of format \(bytes.first ?? 0)")
        require(result?.packetID != nil, "no sequence number")
    }
    return 0
}

@_cdecl("FuzzRuuvi_main")
public func fuzzRuuviMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzRuuvi(data, size) })
}
