import Testing
@testable import Bluetooth

@Test func bluetoothModuleLoads() {}
