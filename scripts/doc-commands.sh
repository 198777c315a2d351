#!/usr/bin/env bash
# Runs every shell command of the docs (README.md, ARCHITECTURE.md,
# docs/*.md), so that none of them can rot; .ci/run calls it. Exits 1
# naming file:line, the command and its exit when one exits other than
# the doc says, 3 when rlbench is not built. Needs a built rlbench (cargo
# build --release): `rlbench` in the docs is ./target/release/rlbench.
#
#   scripts/doc-commands.sh             every file
#   scripts/doc-commands.sh docs/x.md   only these files
#   scripts/doc-commands.sh --list      what would run, and what not, without running
#
# The convention (docs/README.md says it for writers):
# - Commands are the lines of fenced blocks tagged sh, bash or console;
#   every other block (text, toml, plain ```) is not run. In sh/bash blocks
#   every line that is not blank or a `#` comment is a command (a trailing
#   `\` continues it); in console blocks the lines after `$ ` are, the rest
#   is output.
# - A command must exit 0, unless its trailing comment says `exit N`
#   (`rlbench check no-such.toml   # exit 2: bad input`), or an
#   `<!-- exit: N -->` line before the block says it for the whole block.
#   A command ending in `&` runs in the background; its exit is not checked.
# - Each block runs as one bash process with the repository root as its
#   working directory (so `cd` and variables carry over to the block's next
#   lines, never to the next block), stdin from /dev/null, the first failing
#   command ending it. Whatever a block started and left running (a
#   `rlbench serve … &`) is stopped when the block ends: SIGTERM to its
#   process group, SIGKILL 10 s later. A block that runs longer than
#   DOC_COMMAND_TIMEOUT seconds (default 600) fails.
# - `<!-- not run: REASON -->` before a block: its commands are not run
#   (printed at the end with the reason). Keep these few: what needs a
#   Docker engine or the network, what this script cannot afford.
#   scripts/test.sh and .ci/run are never run (they are what runs this).
# - `<!-- run by tests: NAME, … -->` before a block: these tests (fn NAME,
#   under tests/ or crates/*/tests/) run what the block does, so it is not
#   run again here; each test must exist.
# - The same command (same text, after the same `cd`s, variables and
#   background commands of its block) runs once.
# - Nothing is installed and nothing leaves this machine: RLBENCH_INSTALL=no
#   for the scripts, CARGO_NET_OFFLINE=true for cargo; rlbench itself sends
#   load to loopback only. Outputs go where the commands say (reports/,
#   target/: both git-ignored); this script's own logs to target/doc-commands/.
# (All in one braced group, read whole before it runs: editing this file
# while it runs does not change the run.)
{
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

list_only=no
files=()
for a in "$@"; do
  case "$a" in
    --list) list_only=yes ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) files+=("$a") ;;
  esac
done
all=no
if [ ${#files[@]} -eq 0 ]; then
  all=yes
  files=(README.md ARCHITECTURE.md)
  for f in docs/*.md; do files+=("$f"); done
fi
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "doc-commands: $f: no such file" >&2; exit 2; }
done

if [ "$list_only" = no ] && [ ! -x target/release/rlbench ]; then
  echo "doc-commands: build rlbench first: cargo build --release" >&2
  exit 3
fi

# --list only reads, so it may run while the docs' commands run (docs/README.md lists them).
if [ "$list_only" = yes ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
else
  out=target/doc-commands
  rm -rf "$out"
  mkdir -p "$out"
fi

# One record per command, fields separated by \x1f:
# file, line, block, block's first line, expected exit, skip reason, test, command.
awk '
  BEGIN { US = sprintf("%c", 31); SQ = sprintf("%c", 39) }
  function flush_markers() { m_exit = ""; m_skip = ""; m_test = "" }
  # The trailing comment of a shell line (outside quotes), or "".
  function comment_of(s,    i, c, q, prev) {
    q = ""; prev = " "
    for (i = 1; i <= length(s); i++) {
      c = substr(s, i, 1)
      if (q != "") { if (c == q) q = ""; else if (c == "\\" && q == "\"") i++ }
      else if (c == SQ || c == "\"") q = c
      else if (c == "\\") i++
      else if (c == "#" && prev ~ /[ \t]/) return substr(s, i)
      prev = c
    }
    return ""
  }
  function emit(    e, c) {
    e = b_exit
    c = comment_of(cmd)
    if (match(c, /exit [0-9]+/)) e = substr(c, RSTART + 5, RLENGTH - 5)
    gsub(/[ \t]+$/, "", cmd)
    print FILENAME US cmd_line US block US b_line US (e == "" ? 0 : e) US b_skip US b_test US cmd
    cmd = ""; cont = 0
  }
  FNR == 1 { fence = ""; flush_markers(); cont = 0; cmd = "" }
  fence == "" && /^<!-- *exit: *[0-9]+ *-->[ \t]*$/ { m_exit = $0; gsub(/[^0-9]/, "", m_exit); next }
  fence == "" && /^<!-- *not run: .*-->[ \t]*$/ { m_skip = $0; sub(/^<!-- *not run: */, "", m_skip); sub(/ *-->[ \t]*$/, "", m_skip); next }
  fence == "" && /^<!-- *run by tests?: *[A-Za-z0-9_, ]+ *-->[ \t]*$/ { m_test = $0; sub(/^<!-- *run by tests?: */, "", m_test); sub(/ *-->[ \t]*$/, "", m_test); next }
  fence == "" && /^[ \t]*(```|~~~)/ {
    line = $0; sub(/^[ \t]*/, "", line)
    fence = substr(line, 1, 3)
    lang = substr(line, 4); gsub(/[ \t]/, "", lang)
    runs = (lang == "sh" || lang == "bash" || lang == "console")
    console = (lang == "console")
    block++; b_line = FNR; b_exit = m_exit; b_skip = m_skip; b_test = m_test
    flush_markers(); cont = 0; cmd = ""
    next
  }
  fence != "" {
    line = $0; sub(/^[ \t]*/, "", line)
    if (substr(line, 1, 3) == fence && line ~ /^(```|~~~)[ \t]*$/) {
      if (cont) { printf "doc-commands: %s:%d: the command goes on past its block\n", FILENAME, cmd_line > "/dev/stderr"; exit 2 }
      fence = ""; next
    }
    if (!runs) next
    text = $0
    if (cont) {
      if (console) sub(/^> ?/, "", text)
      sub(/^[ \t]+/, "", text)
      cmd = cmd " " text
    } else if (console) {
      if (substr(text, 1, 2) != "$ ") next
      cmd = substr(text, 3); cmd_line = FNR
    } else {
      if (text ~ /^[ \t]*(#|$)/) next
      cmd = text; cmd_line = FNR
    }
    if (cmd ~ /\\$/ && comment_of(cmd) == "") { sub(/[ \t]*\\$/, "", cmd); cont = 1 } else emit()
    next
  }
  /[^ \t]/ { flush_markers() }
' "${files[@]}" >"$out/commands"

# Every shipped scenario is named by a command of the docs (or by the script
# a command runs), run or not: dropping one from the docs is a failure here,
# not a silent loss of what CI runs.
if [ "$all" = yes ]; then
  for sc in scenarios/*.toml; do
    found=no
    while IFS=$'\x1f' read -r _ _ _ _ _ _ _ cmd; do
      first=${cmd%% *}
      if [[ "$cmd" == *"$sc"* ]] || { [[ "$first" == scripts/* ]] && [ -f "$first" ] && grep -qF "$sc" "$first"; }; then
        found=yes
        break
      fi
    done <"$out/commands"
    if [ "$found" = no ]; then
      echo "doc-commands: $sc: no command of README.md, ARCHITECTURE.md or docs/ runs it" >&2
      exit 1
    fi
  done
fi

# A command in the background, and what changes the state the next lines
# of a block see (a background command too: a server they talk to).
background='&[[:space:]]*(#.*)?$'
assignment='^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$'
stateful() { [[ "$1" =~ ^(cd|export|pushd)[[:space:]] || "$1" =~ $assignment || "$1" =~ $background ]]; }

declare -A seen
skipped=()
covered=()
failed=()
ran=0
dups=0
blocks=()
declare -A block_cmds
while IFS=$'\x1f' read -r file line block bline expect skip test cmd; do
  id="$file:$bline"
  [[ -v "block_cmds[$id]" ]] || blocks+=("$id")
  block_cmds[$id]+="$file"$'\x1f'"$line"$'\x1f'"$expect"$'\x1f'"$skip"$'\x1f'"$test"$'\x1f'"$cmd"$'\x1e'
done <"$out/commands"

start=$EPOCHREALTIME
n=0
for id in "${blocks[@]}"; do
  n=$((n + 1))
  script="$out/block-$n.sh"
  status="$out/block-$n.status"
  log="$out/block-$n.log"
  : >"$status"
  {
    echo "echo \$\$ >'$root/$out/block-$n.pgid'"
    echo "cd '$root' || exit 96"
  } >"$script"
  context=""
  runs=0
  said=no
  declare -A what=()
  IFS=$'\x1e' read -r -d '' -a records <<<"${block_cmds[$id]}" || true
  for rec in "${records[@]}"; do
    [ -n "$rec" ] && [ "$rec" != $'\n' ] || continue
    IFS=$'\x1f' read -r file line expect skip test cmd <<<"$rec"
    where="$file:$line"
    if [ -n "$skip" ]; then
      skipped+=("$where: $cmd"$'\n'"      not run: $skip")
      continue
    fi
    if [ -n "$test" ]; then
      # Said once per block: its first command, and the tests.
      if [ "$said" = no ]; then
        said=yes
        names=()
        for t in ${test//,/ }; do
          names+=("$t")
          grep -rqsE "fn $t\b" tests crates/*/tests ||
            failed+=("$where: the test $t named before its block is not in tests/ or crates/*/tests/")
        done
        more=""
        if [ ${#records[@]} -gt 2 ]; then more=" (and the rest of its block)"; fi
        covered+=("$where: $cmd$more"$'\n'"      run by: ${names[*]}")
      fi
      continue
    fi
    first=${cmd%% *}
    if [ "$first" = scripts/test.sh ] || [ "$first" = .ci/run ]; then
      skipped+=("$where: $cmd"$'\n'"      not run: it is what runs this script")
      continue
    fi
    key="$context"$'\x1d'"$cmd"$'\x1d'"$expect"
    if stateful "$cmd"; then
      context+="$cmd"$'\x1d'
    elif [ -n "${seen[$key]+set}" ]; then
      dups=$((dups + 1))
      continue
    else
      seen[$key]="$where"
      runs=$((runs + 1))
    fi
    what[$line]="$where"$'\x1f'"$expect"$'\x1f'"$cmd"
    {
      echo "printf 'start %s %s\n' $line \$EPOCHREALTIME >>'$root/$status'"
      printf '%s\n' "$cmd"
      echo "__rc=\$?; printf 'done %s %s %s\n' $line \$__rc \$EPOCHREALTIME >>'$root/$status'"
      if [[ ! "$cmd" =~ $background ]]; then
        echo "[ \$__rc = $expect ] || exit 97"
      fi
    } >>"$script"
  done
  # A block whose every command ran before (or is not run) is not started.
  if [ "$runs" -eq 0 ]; then
    unset what
    continue
  fi
  if [ "$list_only" = yes ]; then
    for l in $(printf '%s\n' "${!what[@]}" | sort -n); do
      IFS=$'\x1f' read -r where expect cmd <<<"${what[$l]}"
      printf 'run   %-28s exit %-3s %s\n' "$where" "$expect" "$cmd"
    done
    unset what
    continue
  fi
  rc=0
  RLBENCH_INSTALL=no CARGO_NET_OFFLINE=true PATH="$root/target/release:$PATH" \
    timeout -k 10 "${DOC_COMMAND_TIMEOUT:-600}" setsid -w bash "$script" </dev/null >"$log" 2>&1 || rc=$?
  # Stop what the block left running (its process group), then wait for it.
  if [ -s "$out/block-$n.pgid" ]; then
    pgid=$(cat "$out/block-$n.pgid")
    if kill -0 -- "-$pgid" 2>/dev/null; then
      kill -TERM -- "-$pgid" 2>/dev/null || true
      for _ in $(seq 100); do
        kill -0 -- "-$pgid" 2>/dev/null || break
        sleep 0.1
      done
      kill -KILL -- "-$pgid" 2>/dev/null || true
    fi
  fi
  # One line per command: its time, where, what.
  last=""
  while read -r kind l a b; do
    case "$kind" in
      start) t0=$a; last=$l ;;
      done)
        IFS=$'\x1f' read -r where expect cmd <<<"${what[$l]}"
        secs=$(awk -v a="$t0" -v b="$b" 'BEGIN { printf "%.1f", b - a }')
        if [ "$a" = "$expect" ] || [[ "$cmd" =~ $background ]]; then
          printf 'ok    %6ss  %-28s %s\n' "$secs" "$where" "$cmd"
        else
          printf 'FAIL  %6ss  %-28s %s\n' "$secs" "$where" "$cmd"
          failed+=("$where: expected exit $expect, got $a: $cmd")
        fi
        ran=$((ran + 1))
        last=""
        ;;
    esac
  done <"$status"
  if [ -n "$last" ]; then
    IFS=$'\x1f' read -r where expect cmd <<<"${what[$last]}"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      failed+=("$where: still running after ${DOC_COMMAND_TIMEOUT:-600} s (its block's limit): $cmd")
    else
      failed+=("$where: its block ended (exit $rc) before it did: $cmd")
    fi
    printf 'FAIL  %-36s %s\n' "$where" "$cmd"
  elif [ "$rc" != 0 ] && [ "$rc" != 97 ]; then
    failed+=("$id: the block ended with exit $rc")
  fi
  if [ "$rc" != 0 ]; then
    echo "---- the last lines of $log:"
    tail -n 40 "$log" | sed 's/^/    /'
    echo "----"
  fi
  unset what
done

if [ ${#covered[@]} -gt 0 ]; then
  echo
  echo "run by tests, not here (${#covered[@]}):"
  printf '  %s\n' "${covered[@]}"
fi
if [ ${#skipped[@]} -gt 0 ]; then
  echo
  echo "not run (${#skipped[@]}):"
  printf '  %s\n' "${skipped[@]}"
fi
echo
[ "$list_only" = yes ] && exit 0
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
echo "doc-commands: $ran commands run in ${secs} s ($dups repeated ones run once), ${#covered[@]} run by tests, ${#skipped[@]} not run"
if [ ${#failed[@]} -gt 0 ]; then
  echo "doc-commands: ${#failed[@]} failed:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
exit 0
}
