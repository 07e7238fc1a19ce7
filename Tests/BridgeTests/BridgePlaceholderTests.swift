import Testing
@testable import Bridge

@Test func bridgeModuleLoads() {}
