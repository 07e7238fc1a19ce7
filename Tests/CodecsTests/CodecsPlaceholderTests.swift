import Testing
@testable import Codecs

@Test func codecsModuleLoads() {}
