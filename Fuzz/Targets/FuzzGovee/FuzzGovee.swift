import Adverts
import AdvertsFuzzSupport
import FuzzSupport

/// Govee manufacturer data with a company id and one of the local names that select a model.
///
/// Input: two bytes of company id, a name selector byte, then the data. Oracle: a temperature, when given, is within
/// what the formats encode and comes with a humidity.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGovee(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let company = UInt16(input.byte()) << 8 | UInt16(input.byte())
    let names = ["", "GVH5075_1234", "GVH5101_1A2B", "Govee_H5074_C3F1", "GVH5051_1111", "GV5179_0006",
                 "GVH5106_5555", "H5179_4444", "GV5112AC3D", "GVH5127"]
    let name = names[Int(input.byte()) % names.count]
    let bytes = input.rest()
    let broadcast = Broadcast(name: name, manufacturerData: [.init(company: company, bytes: bytes)])
    guard let result = decodeTwice(broadcast, as: .govee) else { return 0 }
    if let temperature = result["temperature"]?.doubleValue {
        require(temperature >= -838.9 && temperature <= 838.9, "temperature \(temperature)")
        require(result["humidity"] != nil, "temperature without humidity")
    }
    return 0
}

@_cdecl("FuzzGovee_main")
public func fuzzGoveeMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzGovee(data, size) })
}
