#!/usr/bin/env bash
# Builds the libFuzzer harnesses (Fuzz/Package.swift) and runs them.
#
#   Fuzz/run.sh smoke [TARGET…]   every kept crash input (Fuzz/Regressions/T) and the whole corpus (Fuzz/Corpus/T)
#                                 once, then FUZZ_SECONDS (default 10) of fuzzing per target; the checked-in corpus is
#                                 not changed. Part of `make test` (through `make fuzz-smoke`).
#   Fuzz/run.sh fuzz  [TARGET…]   FUZZ_SECONDS (default 300) per target, then merges what grew coverage into Fuzz/Corpus/T.
#   Fuzz/run.sh build
#
# A crash leaves its input in .build-fuzz/artifacts/T/ and the script exits 1. Fix the bug, then keep the input as a
# regression test: cp .build-fuzz/artifacts/T/crash-… Fuzz/Regressions/T/<what-it-was>.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
mode="${1:-smoke}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzCodecs FuzzConfig FuzzCommands FuzzBridgeRequest FuzzDBus
                                   FuzzBTHome FuzzXiaomi FuzzThermometerFirmware FuzzGovee FuzzRuuvi FuzzBeacons
                                   FuzzReplayLedger FuzzESPHomeAPI)
scratch="$repo/.build-fuzz"
bin="$scratch/release"

# Release (faster fuzzing) with testability, so harnesses may `@testable import` internal entry points.
swift build --package-path Fuzz -c release --scratch-path "$scratch" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -enable-testing 2>&1 \
    | grep -v "Cannot export local symbol" | tail -3
[ "$mode" = build ] && exit 0

# The Swift runtime's backtracer would hang on libFuzzer's deadly-signal path; libFuzzer prints the stack itself.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
seconds="${FUZZ_SECONDS:-$([ "$mode" = fuzz ] && echo 300 || echo 6)}"
failed=()

for t in "${targets[@]}"; do
    artifacts="$scratch/artifacts/$t/"
    mkdir -p "$artifacts" "Fuzz/Corpus/$t"
    common=(-artifact_prefix="$artifacts" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
    log="$scratch/$t.log"
    regressions=()
    if [ -d "Fuzz/Regressions/$t" ]; then
        while IFS= read -r -d '' f; do regressions+=("$f"); done < <(find "Fuzz/Regressions/$t" -type f -print0 | sort -z)
    fi
    if [ ${#regressions[@]} -gt 0 ] && ! "$bin/$t" "${common[@]}" "${regressions[@]}" > "$log" 2>&1; then
        echo "$t: a kept regression input crashes again:"; grep -E "Fatal error|ERROR|Running:" "$log" | tail -5
        failed+=("$t"); continue
    fi
    case "$mode" in
        smoke)
            new="$(mktemp -d "$scratch/new-$t.XXXXXX")"
            if "$bin/$t" "${common[@]}" -max_total_time="$seconds" "$new" "Fuzz/Corpus/$t" > "$log" 2>&1; then
                status=ok
            else
                status=CRASH; failed+=("$t")
            fi
            rm -rf "$new"
            ;;
        fuzz)
            grown="$scratch/corpus/$t"
            mkdir -p "$grown"
            if "$bin/$t" "${common[@]}" -max_total_time="$seconds" "$grown" "Fuzz/Corpus/$t" > "$log" 2>&1; then
                status=ok
                "$bin/$t" -merge=1 "Fuzz/Corpus/$t" "$grown" >> "$log" 2>&1
            else
                status=CRASH; failed+=("$t")
            fi
            ;;
        *) echo "usage: $0 smoke|fuzz|build [TARGET…]" >&2; exit 64 ;;
    esac
    runs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)"
    cov="$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)"
    printf '%-23s %-5s %3ss  %8s runs  %s  corpus %s  regressions %s\n' "$t" "$status" "$seconds" "${runs:-?}" \
        "${cov:-}" "$(ls "Fuzz/Corpus/$t" | wc -l)" "${#regressions[@]}"
    if [ "$status" = CRASH ]; then
        grep -E "Fatal error|ERROR: (AddressSanitizer|libFuzzer)|Test unit written" "$log" | head -5
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashes in ${failed[*]} (logs: $scratch/<target>.log, inputs: $scratch/artifacts/<target>/)" >&2
    exit 1
fi
