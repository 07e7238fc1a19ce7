import CESPHomeProto

extension APIMessage {
    /// The frame's type number and the message's protobuf bytes (empty for a message with every field at its
    /// default). `.unknown` has no payload to give back: it encodes as its type and no bytes.
    public func encoded() -> (type: UInt16, payload: [UInt8]) {
        switch self {
        case let .helloRequest(clientInfo, major, minor):
            return (APIMessageID.helloRequest, packed(Esphome__HelloRequest(), esphome__hello_request__init) { m, a in
                m.client_info = a.string(clientInfo)
                m.api_version_major = major
                m.api_version_minor = minor
            })
        case let .helloResponse(major, minor, serverInfo, name):
            return (APIMessageID.helloResponse, packed(Esphome__HelloResponse(), esphome__hello_response__init) { m, a in
                m.api_version_major = major
                m.api_version_minor = minor
                m.server_info = a.string(serverInfo)
                m.name = a.string(name)
            })
        case let .authenticationRequest(password):
            return (APIMessageID.authenticationRequest,
                    packed(Esphome__AuthenticationRequest(), esphome__authentication_request__init) { m, a in
                        m.password = a.string(password)
                    })
        case let .authenticationResponse(invalidPassword):
            return (APIMessageID.authenticationResponse,
                    packed(Esphome__AuthenticationResponse(), esphome__authentication_response__init) { m, _ in
                        m.invalid_password = invalidPassword ? 1 : 0
                    })
        case let .disconnectRequest(reason):
            return (APIMessageID.disconnectRequest,
                    packed(Esphome__DisconnectRequest(), esphome__disconnect_request__init) { m, _ in
                        m.reason = cEnum(reason.rawValue)
                    })
        case .disconnectResponse: return (APIMessageID.disconnectResponse, [])
        case .pingRequest: return (APIMessageID.pingRequest, [])
        case .pingResponse: return (APIMessageID.pingResponse, [])
        case .deviceInfoRequest: return (APIMessageID.deviceInfoRequest, [])
        case let .deviceInfoResponse(info):
            return (APIMessageID.deviceInfoResponse,
                    packed(Esphome__DeviceInfoResponse(), esphome__device_info_response__init) { m, a in info.fill(&m, a) })
        case .listEntitiesRequest: return (APIMessageID.listEntitiesRequest, [])
        case .listEntitiesDoneResponse: return (APIMessageID.listEntitiesDoneResponse, [])
        case .subscribeStatesRequest: return (APIMessageID.subscribeStatesRequest, [])
        case let .subscribeLogsRequest(level, dumpConfig):
            return (APIMessageID.subscribeLogsRequest,
                    packed(Esphome__SubscribeLogsRequest(), esphome__subscribe_logs_request__init) { m, _ in
                        m.level = cEnum(level.rawValue)
                        m.dump_config = dumpConfig ? 1 : 0
                    })
        case .subscribeHomeassistantServicesRequest: return (APIMessageID.subscribeHomeassistantServicesRequest, [])
        case .subscribeHomeAssistantStatesRequest: return (APIMessageID.subscribeHomeAssistantStatesRequest, [])
        case .getTimeRequest: return (APIMessageID.getTimeRequest, [])
        case let .getTimeResponse(epochSeconds, timezone):
            return (APIMessageID.getTimeResponse,
                    packed(Esphome__GetTimeResponse(), esphome__get_time_response__init) { m, a in
                        m.epoch_seconds = epochSeconds
                        m.timezone = a.string(timezone)
                    })
        case .unknown(let type): return (type, [])
        default: return encodedBluetooth()
        }
    }

    private func encodedBluetooth() -> (type: UInt16, payload: [UInt8]) {
        switch self {
        case let .subscribeBluetoothLEAdvertisementsRequest(flags):
            return (APIMessageID.subscribeBluetoothLEAdvertisementsRequest,
                    packed(Esphome__SubscribeBluetoothLEAdvertisementsRequest(),
                           esphome__subscribe_bluetooth_leadvertisements_request__init) { m, _ in m.flags = flags })
        case .unsubscribeBluetoothLEAdvertisementsRequest:
            return (APIMessageID.unsubscribeBluetoothLEAdvertisementsRequest, [])
        case let .bluetoothLERawAdvertisementsResponse(adverts):
            return (APIMessageID.bluetoothLERawAdvertisementsResponse,
                    packed(Esphome__BluetoothLERawAdvertisementsResponse(),
                           esphome__bluetooth_leraw_advertisements_response__init) { m, a in
                        m.advertisements = a.messages(adverts.map { advert in
                            var c = Esphome__BluetoothLERawAdvertisement()
                            esphome__bluetooth_leraw_advertisement__init(&c)
                            c.address = advert.address
                            c.rssi = advert.rssi
                            c.address_type = advert.addressType
                            c.data = a.bytes(advert.data)
                            return c
                        })
                        m.n_advertisements = adverts.count
                    })
        case let .bluetoothDeviceRequest(address, requestType, hasAddressType, addressType):
            return (APIMessageID.bluetoothDeviceRequest,
                    packed(Esphome__BluetoothDeviceRequest(), esphome__bluetooth_device_request__init) { m, _ in
                        m.address = address
                        m.request_type = cEnum(requestType.rawValue)
                        m.has_address_type = hasAddressType ? 1 : 0
                        m.address_type = addressType
                    })
        case let .bluetoothDeviceConnectionResponse(address, connected, mtu, error):
            return (APIMessageID.bluetoothDeviceConnectionResponse,
                    packed(Esphome__BluetoothDeviceConnectionResponse(),
                           esphome__bluetooth_device_connection_response__init) { m, _ in
                        m.address = address
                        m.connected = connected ? 1 : 0
                        m.mtu = mtu
                        m.error = error
                    })
        case let .bluetoothGATTGetServicesRequest(address):
            return (APIMessageID.bluetoothGATTGetServicesRequest,
                    packed(Esphome__BluetoothGATTGetServicesRequest(), esphome__bluetooth_gattget_services_request__init) {
                        m, _ in m.address = address
                    })
        case let .bluetoothGATTGetServicesResponse(address, services):
            return (APIMessageID.bluetoothGATTGetServicesResponse,
                    packed(Esphome__BluetoothGATTGetServicesResponse(),
                           esphome__bluetooth_gattget_services_response__init) { m, a in
                        m.address = address
                        m.services = a.messages(services.map { $0.cValue(a) })
                        m.n_services = services.count
                    })
        case let .bluetoothGATTGetServicesDoneResponse(address):
            return (APIMessageID.bluetoothGATTGetServicesDoneResponse,
                    packed(Esphome__BluetoothGATTGetServicesDoneResponse(),
                           esphome__bluetooth_gattget_services_done_response__init) { m, _ in m.address = address })
        case let .bluetoothGATTReadRequest(address, handle):
            return (APIMessageID.bluetoothGATTReadRequest,
                    packed(Esphome__BluetoothGATTReadRequest(), esphome__bluetooth_gattread_request__init) { m, _ in
                        m.address = address
                        m.handle = handle
                    })
        case let .bluetoothGATTReadResponse(address, handle, data):
            return (APIMessageID.bluetoothGATTReadResponse,
                    packed(Esphome__BluetoothGATTReadResponse(), esphome__bluetooth_gattread_response__init) { m, a in
                        m.address = address
                        m.handle = handle
                        m.data = a.bytes(data)
                    })
        case let .bluetoothGATTWriteRequest(address, handle, response, data):
            return (APIMessageID.bluetoothGATTWriteRequest,
                    packed(Esphome__BluetoothGATTWriteRequest(), esphome__bluetooth_gattwrite_request__init) { m, a in
                        m.address = address
                        m.handle = handle
                        m.response = response ? 1 : 0
                        m.data = a.bytes(data)
                    })
        case let .bluetoothGATTWriteResponse(address, handle):
            return (APIMessageID.bluetoothGATTWriteResponse,
                    packed(Esphome__BluetoothGATTWriteResponse(), esphome__bluetooth_gattwrite_response__init) { m, _ in
                        m.address = address
                        m.handle = handle
                    })
        case let .bluetoothGATTReadDescriptorRequest(address, handle):
            return (APIMessageID.bluetoothGATTReadDescriptorRequest,
                    packed(Esphome__BluetoothGATTReadDescriptorRequest(),
                           esphome__bluetooth_gattread_descriptor_request__init) { m, _ in
                        m.address = address
                        m.handle = handle
                    })
        case let .bluetoothGATTWriteDescriptorRequest(address, handle, data):
            return (APIMessageID.bluetoothGATTWriteDescriptorRequest,
                    packed(Esphome__BluetoothGATTWriteDescriptorRequest(),
                           esphome__bluetooth_gattwrite_descriptor_request__init) { m, a in
                        m.address = address
                        m.handle = handle
                        m.data = a.bytes(data)
                    })
        case let .bluetoothGATTNotifyRequest(address, handle, enable):
            return (APIMessageID.bluetoothGATTNotifyRequest,
                    packed(Esphome__BluetoothGATTNotifyRequest(), esphome__bluetooth_gattnotify_request__init) { m, _ in
                        m.address = address
                        m.handle = handle
                        m.enable = enable ? 1 : 0
                    })
        case let .bluetoothGATTNotifyResponse(address, handle):
            return (APIMessageID.bluetoothGATTNotifyResponse,
                    packed(Esphome__BluetoothGATTNotifyResponse(), esphome__bluetooth_gattnotify_response__init) { m, _ in
                        m.address = address
                        m.handle = handle
                    })
        case let .bluetoothGATTNotifyDataResponse(address, handle, data):
            return (APIMessageID.bluetoothGATTNotifyDataResponse,
                    packed(Esphome__BluetoothGATTNotifyDataResponse(),
                           esphome__bluetooth_gattnotify_data_response__init) { m, a in
                        m.address = address
                        m.handle = handle
                        m.data = a.bytes(data)
                    })
        case let .bluetoothGATTErrorResponse(address, handle, error):
            return (APIMessageID.bluetoothGATTErrorResponse,
                    packed(Esphome__BluetoothGATTErrorResponse(), esphome__bluetooth_gatterror_response__init) { m, _ in
                        m.address = address
                        m.handle = handle
                        m.error = error
                    })
        case .subscribeBluetoothConnectionsFreeRequest:
            return (APIMessageID.subscribeBluetoothConnectionsFreeRequest, [])
        case let .bluetoothConnectionsFreeResponse(free, limit, allocated):
            return (APIMessageID.bluetoothConnectionsFreeResponse,
                    packed(Esphome__BluetoothConnectionsFreeResponse(),
                           esphome__bluetooth_connections_free_response__init) { m, a in
                        m.free = free
                        m.limit = limit
                        m.allocated = a.array(allocated)
                        m.n_allocated = allocated.count
                    })
        case let .bluetoothDevicePairingResponse(address, paired, error):
            return (APIMessageID.bluetoothDevicePairingResponse,
                    packed(Esphome__BluetoothDevicePairingResponse(), esphome__bluetooth_device_pairing_response__init) {
                        m, _ in
                        m.address = address
                        m.paired = paired ? 1 : 0
                        m.error = error
                    })
        case let .bluetoothDeviceUnpairingResponse(address, success, error):
            return (APIMessageID.bluetoothDeviceUnpairingResponse,
                    packed(Esphome__BluetoothDeviceUnpairingResponse(),
                           esphome__bluetooth_device_unpairing_response__init) { m, _ in
                        m.address = address
                        m.success = success ? 1 : 0
                        m.error = error
                    })
        case let .bluetoothDeviceClearCacheResponse(address, success, error):
            return (APIMessageID.bluetoothDeviceClearCacheResponse,
                    packed(Esphome__BluetoothDeviceClearCacheResponse(),
                           esphome__bluetooth_device_clear_cache_response__init) { m, _ in
                        m.address = address
                        m.success = success ? 1 : 0
                        m.error = error
                    })
        case let .bluetoothScannerStateResponse(state, mode, configuredMode):
            return (APIMessageID.bluetoothScannerStateResponse,
                    packed(Esphome__BluetoothScannerStateResponse(), esphome__bluetooth_scanner_state_response__init) {
                        m, _ in
                        m.state = cEnum(state.rawValue)
                        m.mode = cEnum(mode.rawValue)
                        m.configured_mode = cEnum(configuredMode.rawValue)
                    })
        case let .bluetoothScannerSetModeRequest(mode):
            return (APIMessageID.bluetoothScannerSetModeRequest,
                    packed(Esphome__BluetoothScannerSetModeRequest(), esphome__bluetooth_scanner_set_mode_request__init) {
                        m, _ in m.mode = cEnum(mode.rawValue)
                    })
        case let .bluetoothSetConnectionParamsRequest(address, minInterval, maxInterval, latency, timeout):
            return (APIMessageID.bluetoothSetConnectionParamsRequest,
                    packed(Esphome__BluetoothSetConnectionParamsRequest(),
                           esphome__bluetooth_set_connection_params_request__init) { m, _ in
                        m.address = address
                        m.min_interval = minInterval
                        m.max_interval = maxInterval
                        m.latency = latency
                        m.timeout = timeout
                    })
        case let .bluetoothSetConnectionParamsResponse(address, error):
            return (APIMessageID.bluetoothSetConnectionParamsResponse,
                    packed(Esphome__BluetoothSetConnectionParamsResponse(),
                           esphome__bluetooth_set_connection_params_response__init) { m, _ in
                        m.address = address
                        m.error = error
                    })
        default:
            // encoded() handled every other case before coming here.
            return (0, [])
        }
    }
}

extension APIMessage.DeviceInfo {
    func fill(_ m: inout Esphome__DeviceInfoResponse, _ a: CArena) {
        m.uses_password = usesPassword ? 1 : 0
        m.name = a.string(name)
        m.mac_address = a.string(macAddress)
        m.esphome_version = a.string(esphomeVersion)
        m.compilation_time = a.string(compilationTime)
        m.model = a.string(model)
        m.has_deep_sleep = hasDeepSleep ? 1 : 0
        m.project_name = a.string(projectName)
        m.project_version = a.string(projectVersion)
        m.webserver_port = webserverPort
        m.legacy_bluetooth_proxy_version = legacyBluetoothProxyVersion
        m.bluetooth_proxy_feature_flags = bluetoothProxyFeatureFlags
        m.manufacturer = a.string(manufacturer)
        m.friendly_name = a.string(friendlyName)
        m.suggested_area = a.string(suggestedArea)
        m.bluetooth_mac_address = a.string(bluetoothMacAddress)
        m.api_encryption_supported = apiEncryptionSupported ? 1 : 0
        m.api_encryption_provisionable = apiEncryptionProvisionable ? 1 : 0
    }
}

extension APIMessage.GATTDescriptor {
    func cValue(_ a: CArena) -> Esphome__BluetoothGATTDescriptor {
        var c = Esphome__BluetoothGATTDescriptor()
        esphome__bluetooth_gattdescriptor__init(&c)
        c.uuid = a.array(uuid)
        c.n_uuid = uuid.count
        c.short_uuid = shortUUID
        c.handle = handle
        return c
    }
}

extension APIMessage.GATTCharacteristic {
    func cValue(_ a: CArena) -> Esphome__BluetoothGATTCharacteristic {
        var c = Esphome__BluetoothGATTCharacteristic()
        esphome__bluetooth_gattcharacteristic__init(&c)
        c.uuid = a.array(uuid)
        c.n_uuid = uuid.count
        c.short_uuid = shortUUID
        c.handle = handle
        c.properties = properties
        c.descriptors = a.messages(descriptors.map { $0.cValue(a) })
        c.n_descriptors = descriptors.count
        return c
    }
}

extension APIMessage.GATTService {
    func cValue(_ a: CArena) -> Esphome__BluetoothGATTService {
        var c = Esphome__BluetoothGATTService()
        esphome__bluetooth_gattservice__init(&c)
        c.uuid = a.array(uuid)
        c.n_uuid = uuid.count
        c.short_uuid = shortUUID
        c.handle = handle
        c.characteristics = a.messages(characteristics.map { $0.cValue(a) })
        c.n_characteristics = characteristics.count
        return c
    }
}
