import Testing
@testable import Config

@Suite struct TopicLevelTests {
    @Test(arguments: [
        ("chest-strap", "chest-strap"), ("a/b", "a_b"), ("a+b#c", "a_b_c"), ("$SYS", "SYS"), ("$$x$", "x$"),
        ("tab\there", "tab_here"), ("nul\u{0}", "nul_"), ("del\u{7F}", "del_"), ("c1\u{85}", "c1_"), ("héllo wörld", "héllo wörld"),
        ("", ""), ("$", ""), ("_$", "_$"),
    ])
    func sanitises(name: String, level: String) {
        #expect(sanitizeTopicLevel(name) == level)
    }
}
