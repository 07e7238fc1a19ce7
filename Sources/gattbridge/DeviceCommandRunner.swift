import BlueZ
import Bluetooth
import Logging

extension BlueZSession {
    /// Opens BlueZ, connects `address`, runs `body` on the characteristic CHAR names, then disconnects (if this
    /// command connected) and closes, whatever happened. SIGINT/SIGTERM cancel `body`.
    static func withCharacteristic<T: Sendable>(
        _ options: BluetoothOptions, _ device: DeviceOptions, address: BluetoothAddress, characteristic: CharacteristicArgument,
        logger: Logger,
        _ body: @escaping @Sendable (BlueZSession, ConnectedDevice, GattCharacteristicInfo) async throws(CLIFailure) -> T
    ) async throws(CLIFailure) -> (value: T, interrupted: Bool) {
        let session = try await open(options, logger: logger)
        let timeout = device.duration
        do throws(CLIFailure) {
            let result = try await Interruption.run { () async throws(CLIFailure) -> T in
                let connected = try await session.connect(address, timeout: timeout)
                do throws(CLIFailure) {
                    let info = try session.characteristic(characteristic, on: connected)
                    let value = try await body(session, connected, info)
                    await session.release(connected)
                    return value
                } catch {
                    await session.release(connected)
                    throw error
                }
            }
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }
}
