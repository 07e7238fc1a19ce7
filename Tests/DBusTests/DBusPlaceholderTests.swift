import Testing
@testable import DBus

@Test func dbusModuleLoads() {}
