import Testing
@testable import Config

@Test func configModuleLoads() {}
