import ESPHomeAPI

/// The answers to a request about a peripheral while the proxy offers no connections (its feature flags say so, and
/// Home Assistant then asks none): each request gets the answer ESPHome gives a failed one, so a client that asks
/// anyway is not left waiting for its timeout.
package enum PeripheralRefusal {
    /// ESP-IDF's `ESP_GATT_REQ_NOT_SUPPORTED`.
    package static let notSupported: Int32 = 0x06

    package static func answers(to request: APIMessage, error notSupported: Int32 = notSupported) -> [APIMessage] {
        switch request {
        case .bluetoothDeviceRequest(let address, let kind, _, _):
            switch kind {
            case .pair: return [.bluetoothDevicePairingResponse(address: address, paired: false, error: notSupported)]
            case .unpair:
                return [.bluetoothDeviceUnpairingResponse(address: address, success: false, error: notSupported)]
            case .clearCache:
                return [.bluetoothDeviceClearCacheResponse(address: address, success: false, error: notSupported)]
            case .disconnect:
                return [.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0, error: 0)]
            default:
                return [.bluetoothDeviceConnectionResponse(address: address, connected: false, mtu: 0,
                                                           error: notSupported)]
            }
        case .bluetoothGATTGetServicesRequest(let address):
            return [.bluetoothGATTErrorResponse(address: address, handle: 0, error: notSupported)]
        case .bluetoothGATTReadRequest(let address, let handle),
             .bluetoothGATTReadDescriptorRequest(let address, let handle):
            return [.bluetoothGATTErrorResponse(address: address, handle: handle, error: notSupported)]
        case .bluetoothGATTWriteRequest(let address, let handle, _, _),
             .bluetoothGATTWriteDescriptorRequest(let address, let handle, _),
             .bluetoothGATTNotifyRequest(let address, let handle, _):
            return [.bluetoothGATTErrorResponse(address: address, handle: handle, error: notSupported)]
        case .bluetoothSetConnectionParamsRequest(let address, _, _, _, _):
            return [.bluetoothSetConnectionParamsResponse(address: address, error: notSupported)]
        default:
            return []
        }
    }
}
