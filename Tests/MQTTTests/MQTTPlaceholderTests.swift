import Testing
@testable import MQTT

@Test func mqttModuleLoads() {}
