import Testing
@testable import Systemd

@Test func systemdModuleLoads() {}
