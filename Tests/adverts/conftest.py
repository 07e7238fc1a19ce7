import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def pytest_terminal_summary(terminalreporter):
    import test_differential

    lines = test_differential.pytest_terminal_summary_lines()
    if lines:
        terminalreporter.section("adverts: packets compared with the reference parsers")
        for line in lines:
            terminalreporter.write_line(line)
