/// Outgoing `text`: UTF-8 plus `delimiter`, in writes of at most MTU − 3 bytes (the ATT write header),
/// 20 bytes when the MTU is unknown (the minimum ATT MTU of 23). Cuts fall between characters where possible,
/// for receivers that decode each write on its own. Returns no chunks when there is nothing to write.
public func textChunks(_ text: String, delimiter: String = "\n", mtu: Int?) -> [[UInt8]] {
    let bytes = Array(text.utf8) + Array(delimiter.utf8)
    let size = mtu.map { max(1, $0 - 3) } ?? 20
    return UTF8Cut.pieces(bytes[...], size: size).map(Array.init)
}
