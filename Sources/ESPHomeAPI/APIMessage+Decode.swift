import CESPHomeProto

extension APIMessage {
    /// The message a frame of `type` carries: nil when protobuf-c refuses the payload (truncated, a wrong wire type,
    /// a length past the end), `.unknown` for a type the proxy does not speak. Never traps, whatever the bytes.
    public static func decode(type: UInt16, payload: [UInt8]) -> APIMessage? {
        switch type {
        case APIMessageID.helloRequest:
            return unpacked(payload, esphome__hello_request__unpack) {
                .helloRequest(clientInfo: swiftString($0.client_info), apiVersionMajor: $0.api_version_major,
                              apiVersionMinor: $0.api_version_minor)
            }
        case APIMessageID.helloResponse:
            return unpacked(payload, esphome__hello_response__unpack) {
                .helloResponse(apiVersionMajor: $0.api_version_major, apiVersionMinor: $0.api_version_minor,
                               serverInfo: swiftString($0.server_info), name: swiftString($0.name))
            }
        case APIMessageID.authenticationRequest:
            return unpacked(payload, esphome__authentication_request__unpack) {
                .authenticationRequest(password: swiftString($0.password))
            }
        case APIMessageID.authenticationResponse:
            return unpacked(payload, esphome__authentication_response__unpack) {
                .authenticationResponse(invalidPassword: $0.invalid_password != 0)
            }
        case APIMessageID.disconnectRequest:
            return unpacked(payload, esphome__disconnect_request__unpack) {
                .disconnectRequest(reason: DisconnectReason(rawValue: rawEnum($0.reason)))
            }
        case APIMessageID.disconnectResponse:
            return unpacked(payload, esphome__disconnect_response__unpack) { _ in .disconnectResponse }
        case APIMessageID.pingRequest:
            return unpacked(payload, esphome__ping_request__unpack) { _ in .pingRequest }
        case APIMessageID.pingResponse:
            return unpacked(payload, esphome__ping_response__unpack) { _ in .pingResponse }
        case APIMessageID.deviceInfoRequest:
            return unpacked(payload, esphome__device_info_request__unpack) { _ in .deviceInfoRequest }
        case APIMessageID.deviceInfoResponse:
            return unpacked(payload, esphome__device_info_response__unpack) { .deviceInfoResponse(DeviceInfo($0)) }
        case APIMessageID.listEntitiesRequest:
            return unpacked(payload, esphome__list_entities_request__unpack) { _ in .listEntitiesRequest }
        case APIMessageID.listEntitiesDoneResponse:
            return unpacked(payload, esphome__list_entities_done_response__unpack) { _ in .listEntitiesDoneResponse }
        case APIMessageID.subscribeStatesRequest:
            return unpacked(payload, esphome__subscribe_states_request__unpack) { _ in .subscribeStatesRequest }
        case APIMessageID.subscribeLogsRequest:
            return unpacked(payload, esphome__subscribe_logs_request__unpack) {
                .subscribeLogsRequest(level: LogLevel(rawValue: rawEnum($0.level)), dumpConfig: $0.dump_config != 0)
            }
        case APIMessageID.subscribeHomeassistantServicesRequest:
            return unpacked(payload, esphome__subscribe_homeassistant_services_request__unpack) { _ in
                .subscribeHomeassistantServicesRequest
            }
        case APIMessageID.subscribeHomeAssistantStatesRequest:
            return unpacked(payload, esphome__subscribe_home_assistant_states_request__unpack) { _ in
                .subscribeHomeAssistantStatesRequest
            }
        case APIMessageID.getTimeRequest:
            return unpacked(payload, esphome__get_time_request__unpack) { _ in .getTimeRequest }
        case APIMessageID.getTimeResponse:
            return unpacked(payload, esphome__get_time_response__unpack) {
                .getTimeResponse(epochSeconds: $0.epoch_seconds, timezone: swiftString($0.timezone))
            }
        default:
            return decodeBluetooth(type: type, payload: payload)
        }
    }

    private static func decodeBluetooth(type: UInt16, payload: [UInt8]) -> APIMessage? {
        switch type {
        case APIMessageID.subscribeBluetoothLEAdvertisementsRequest:
            return unpacked(payload, esphome__subscribe_bluetooth_leadvertisements_request__unpack) {
                .subscribeBluetoothLEAdvertisementsRequest(flags: $0.flags)
            }
        case APIMessageID.unsubscribeBluetoothLEAdvertisementsRequest:
            return unpacked(payload, esphome__unsubscribe_bluetooth_leadvertisements_request__unpack) { _ in
                .unsubscribeBluetoothLEAdvertisementsRequest
            }
        case APIMessageID.bluetoothLERawAdvertisementsResponse:
            return unpacked(payload, esphome__bluetooth_leraw_advertisements_response__unpack) {
                .bluetoothLERawAdvertisementsResponse(swiftMessages($0.advertisements, $0.n_advertisements) {
                    RawAdvertisement(address: $0.address, rssi: $0.rssi, addressType: $0.address_type,
                                     data: swiftBytes($0.data))
                })
            }
        case APIMessageID.bluetoothDeviceRequest:
            return unpacked(payload, esphome__bluetooth_device_request__unpack) {
                .bluetoothDeviceRequest(address: $0.address,
                                        requestType: BluetoothDeviceRequestType(rawValue: rawEnum($0.request_type)),
                                        hasAddressType: $0.has_address_type != 0, addressType: $0.address_type)
            }
        case APIMessageID.bluetoothDeviceConnectionResponse:
            return unpacked(payload, esphome__bluetooth_device_connection_response__unpack) {
                .bluetoothDeviceConnectionResponse(address: $0.address, connected: $0.connected != 0, mtu: $0.mtu,
                                                   error: $0.error)
            }
        case APIMessageID.bluetoothGATTGetServicesRequest:
            return unpacked(payload, esphome__bluetooth_gattget_services_request__unpack) {
                .bluetoothGATTGetServicesRequest(address: $0.address)
            }
        case APIMessageID.bluetoothGATTGetServicesResponse:
            return unpacked(payload, esphome__bluetooth_gattget_services_response__unpack) {
                .bluetoothGATTGetServicesResponse(address: $0.address,
                                                  services: swiftMessages($0.services, $0.n_services, GATTService.init))
            }
        case APIMessageID.bluetoothGATTGetServicesDoneResponse:
            return unpacked(payload, esphome__bluetooth_gattget_services_done_response__unpack) {
                .bluetoothGATTGetServicesDoneResponse(address: $0.address)
            }
        case APIMessageID.bluetoothGATTReadRequest:
            return unpacked(payload, esphome__bluetooth_gattread_request__unpack) {
                .bluetoothGATTReadRequest(address: $0.address, handle: $0.handle)
            }
        case APIMessageID.bluetoothGATTReadResponse:
            return unpacked(payload, esphome__bluetooth_gattread_response__unpack) {
                .bluetoothGATTReadResponse(address: $0.address, handle: $0.handle, data: swiftBytes($0.data))
            }
        case APIMessageID.bluetoothGATTWriteRequest:
            return unpacked(payload, esphome__bluetooth_gattwrite_request__unpack) {
                .bluetoothGATTWriteRequest(address: $0.address, handle: $0.handle, response: $0.response != 0,
                                           data: swiftBytes($0.data))
            }
        case APIMessageID.bluetoothGATTWriteResponse:
            return unpacked(payload, esphome__bluetooth_gattwrite_response__unpack) {
                .bluetoothGATTWriteResponse(address: $0.address, handle: $0.handle)
            }
        case APIMessageID.bluetoothGATTReadDescriptorRequest:
            return unpacked(payload, esphome__bluetooth_gattread_descriptor_request__unpack) {
                .bluetoothGATTReadDescriptorRequest(address: $0.address, handle: $0.handle)
            }
        case APIMessageID.bluetoothGATTWriteDescriptorRequest:
            return unpacked(payload, esphome__bluetooth_gattwrite_descriptor_request__unpack) {
                .bluetoothGATTWriteDescriptorRequest(address: $0.address, handle: $0.handle, data: swiftBytes($0.data))
            }
        case APIMessageID.bluetoothGATTNotifyRequest:
            return unpacked(payload, esphome__bluetooth_gattnotify_request__unpack) {
                .bluetoothGATTNotifyRequest(address: $0.address, handle: $0.handle, enable: $0.enable != 0)
            }
        case APIMessageID.bluetoothGATTNotifyResponse:
            return unpacked(payload, esphome__bluetooth_gattnotify_response__unpack) {
                .bluetoothGATTNotifyResponse(address: $0.address, handle: $0.handle)
            }
        case APIMessageID.bluetoothGATTNotifyDataResponse:
            return unpacked(payload, esphome__bluetooth_gattnotify_data_response__unpack) {
                .bluetoothGATTNotifyDataResponse(address: $0.address, handle: $0.handle, data: swiftBytes($0.data))
            }
        case APIMessageID.bluetoothGATTErrorResponse:
            return unpacked(payload, esphome__bluetooth_gatterror_response__unpack) {
                .bluetoothGATTErrorResponse(address: $0.address, handle: $0.handle, error: $0.error)
            }
        case APIMessageID.subscribeBluetoothConnectionsFreeRequest:
            return unpacked(payload, esphome__subscribe_bluetooth_connections_free_request__unpack) { _ in
                .subscribeBluetoothConnectionsFreeRequest
            }
        case APIMessageID.bluetoothConnectionsFreeResponse:
            return unpacked(payload, esphome__bluetooth_connections_free_response__unpack) {
                .bluetoothConnectionsFreeResponse(free: $0.free, limit: $0.limit,
                                                  allocated: swiftArray($0.allocated, $0.n_allocated))
            }
        case APIMessageID.bluetoothDevicePairingResponse:
            return unpacked(payload, esphome__bluetooth_device_pairing_response__unpack) {
                .bluetoothDevicePairingResponse(address: $0.address, paired: $0.paired != 0, error: $0.error)
            }
        case APIMessageID.bluetoothDeviceUnpairingResponse:
            return unpacked(payload, esphome__bluetooth_device_unpairing_response__unpack) {
                .bluetoothDeviceUnpairingResponse(address: $0.address, success: $0.success != 0, error: $0.error)
            }
        case APIMessageID.bluetoothDeviceClearCacheResponse:
            return unpacked(payload, esphome__bluetooth_device_clear_cache_response__unpack) {
                .bluetoothDeviceClearCacheResponse(address: $0.address, success: $0.success != 0, error: $0.error)
            }
        case APIMessageID.bluetoothScannerStateResponse:
            return unpacked(payload, esphome__bluetooth_scanner_state_response__unpack) {
                .bluetoothScannerStateResponse(state: BluetoothScannerState(rawValue: rawEnum($0.state)),
                                               mode: BluetoothScannerMode(rawValue: rawEnum($0.mode)),
                                               configuredMode: BluetoothScannerMode(rawValue: rawEnum($0.configured_mode)))
            }
        case APIMessageID.bluetoothScannerSetModeRequest:
            return unpacked(payload, esphome__bluetooth_scanner_set_mode_request__unpack) {
                .bluetoothScannerSetModeRequest(mode: BluetoothScannerMode(rawValue: rawEnum($0.mode)))
            }
        case APIMessageID.bluetoothSetConnectionParamsRequest:
            return unpacked(payload, esphome__bluetooth_set_connection_params_request__unpack) {
                .bluetoothSetConnectionParamsRequest(address: $0.address, minInterval: $0.min_interval,
                                                     maxInterval: $0.max_interval, latency: $0.latency,
                                                     timeout: $0.timeout)
            }
        case APIMessageID.bluetoothSetConnectionParamsResponse:
            return unpacked(payload, esphome__bluetooth_set_connection_params_response__unpack) {
                .bluetoothSetConnectionParamsResponse(address: $0.address, error: $0.error)
            }
        default:
            return .unknown(type: type)
        }
    }
}

extension APIMessage.DeviceInfo {
    init(_ c: Esphome__DeviceInfoResponse) {
        usesPassword = c.uses_password != 0
        name = swiftString(c.name)
        macAddress = swiftString(c.mac_address)
        esphomeVersion = swiftString(c.esphome_version)
        compilationTime = swiftString(c.compilation_time)
        model = swiftString(c.model)
        hasDeepSleep = c.has_deep_sleep != 0
        projectName = swiftString(c.project_name)
        projectVersion = swiftString(c.project_version)
        webserverPort = c.webserver_port
        legacyBluetoothProxyVersion = c.legacy_bluetooth_proxy_version
        bluetoothProxyFeatureFlags = c.bluetooth_proxy_feature_flags
        manufacturer = swiftString(c.manufacturer)
        friendlyName = swiftString(c.friendly_name)
        suggestedArea = swiftString(c.suggested_area)
        bluetoothMacAddress = swiftString(c.bluetooth_mac_address)
        apiEncryptionSupported = c.api_encryption_supported != 0
        apiEncryptionProvisionable = c.api_encryption_provisionable != 0
    }
}

extension APIMessage.GATTDescriptor {
    init(_ c: Esphome__BluetoothGATTDescriptor) {
        self.init(uuid: swiftArray(c.uuid, c.n_uuid), shortUUID: c.short_uuid, handle: c.handle)
    }
}

extension APIMessage.GATTCharacteristic {
    init(_ c: Esphome__BluetoothGATTCharacteristic) {
        self.init(uuid: swiftArray(c.uuid, c.n_uuid), shortUUID: c.short_uuid, handle: c.handle,
                  properties: c.properties,
                  descriptors: swiftMessages(c.descriptors, c.n_descriptors, APIMessage.GATTDescriptor.init))
    }
}

extension APIMessage.GATTService {
    init(_ c: Esphome__BluetoothGATTService) {
        self.init(uuid: swiftArray(c.uuid, c.n_uuid), shortUUID: c.short_uuid, handle: c.handle,
                  characteristics: swiftMessages(c.characteristics, c.n_characteristics,
                                                 APIMessage.GATTCharacteristic.init))
    }
}
