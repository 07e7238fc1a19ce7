import Testing
@testable import BlueZ

@Test func bluezModuleLoads() {}
