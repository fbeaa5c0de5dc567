# Shared by the scripts under benches/ (sourced): each figure that has a target is printed as
# one RESULT line, which scripts/bench gathers into its table.
#
#   result NAME VALUE OP TARGET [UNIT]    # OP: <= or >=; a missing VALUE is a miss
#
# bench_failed is 1 after any miss: end a bench with `exit "$bench_failed"`.
bench_failed=0
result() {
    local name="$1" value="$2" op="$3" target="$4" unit="${5:-}" verdict
    if awk -v v="$value" -v t="$target" -v op="$op" 'BEGIN {
        if (v == "" || v != v + 0) exit 1
        exit !(op == "<=" ? v + 0 <= t + 0 : v + 0 >= t + 0) }'; then
        verdict=PASS
    else
        verdict=FAIL
        bench_failed=1
    fi
    printf 'RESULT\t%s\t%s%s\t%s %s%s\t%s\n' "$name" "${value:-?}" "${unit:+ $unit}" "$op" \
        "$target" "${unit:+ $unit}" "$verdict"
}

# The tool's release build (built first if out of date) as $bin, in the project's target
# directory unless CARGO_TARGET_DIR says another.
release_bin() {
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
    cargo build --release --quiet
    bin="$CARGO_TARGET_DIR/release/lgate-plogp"
}
