#!/usr/bin/env bash
# The tiers of `make test` and their wall times, so the budget (docs/developing.md: within 40 minutes on 2 cores) stays
# visible and a tier that grows is seen at once.
#
#   scripts/tier.sh --start        a new record (.build/tiers.tsv) and the suite's start time
#   scripts/tier.sh NAME CMD…      runs CMD; records NAME, its seconds and its exit status; exits with CMD's status
#   scripts/tier.sh --summary      prints each tier's time, the total wall time, and which tier failed, if one did
#
# TIER_RECORD overrides the record's path.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
record="${TIER_RECORD:-$REPO/.build/tiers.tsv}"

case "${1:-}" in
    --start)
        mkdir -p "$(dirname "$record")"
        printf 'start\t%s\n' "$(date +%s)" > "$record"
        ;;
    --summary)
        [ -f "$record" ] || exit 0
        echo "make test: tier times (wall)" >&2
        awk -F '\t' -v now="$(date +%s)" '
            $1 == "start" { start = $2; next }
            { printf "  %-22s %5d s  %5.1f min%s\n", $1, $2, $2 / 60, ($3 == 0 ? "" : "  FAILED (exit " $3 ")") }
            END { if (start) printf "  %-22s %5d s  %5.1f min\n", "total (wall)", now - start, (now - start) / 60 }
        ' "$record" >&2
        ;;
    *)
        [ $# -ge 2 ] || { echo "usage: tier.sh NAME CMD…" >&2; exit 2; }
        name=$1; shift
        started=$(date +%s)
        "$@"
        status=$?
        mkdir -p "$(dirname "$record")"
        printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - started))" "$status" >> "$record"
        exit "$status"
        ;;
esac
