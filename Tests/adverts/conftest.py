import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def pytest_terminal_summary(terminalreporter):
    # Only when the differential test ran: the CLI tests alone (as the arm64 check runs them under qemu) need none of
    # the reference parsers' packages.
    test_differential = sys.modules.get("test_differential")
    if test_differential is None:
        return
    lines = test_differential.pytest_terminal_summary_lines()
    if lines:
        terminalreporter.section("adverts: packets compared with the reference parsers")
        for line in lines:
            terminalreporter.write_line(line)
