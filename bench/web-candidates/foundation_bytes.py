"""Bytes of the symbols of an unstripped binary that belong to Foundation's modules: `nm -S` sizes, summed by module
(mangled names: 20FoundationEssentials, 10Foundation, 30FoundationInternationalization; ICU's C symbols end in _7x).
Usage: python3 foundation_bytes.py BINARY"""
import re
import subprocess
import sys

sums = {"Essentials": 0, "Foundation": 0, "Intl": 0, "ICU": 0}
out = subprocess.run(["nm", "-S", "--defined-only", sys.argv[1]], capture_output=True, text=True).stdout
for line in out.splitlines():
    f = line.split()
    if len(f) != 4:
        continue
    size, name = int(f[1], 16), f[3]
    if "20FoundationEssentials" in name:
        sums["Essentials"] += size
    elif "30FoundationInternationalization" in name:
        sums["Intl"] += size
    elif re.search(r"10Foundation(?!Essentials)", name):
        sums["Foundation"] += size
    elif re.search(r"_7[0-9]$|icu_7[0-9]|^icudt|FoundationICU", name):
        sums["ICU"] += size
print(", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sums.items()))
