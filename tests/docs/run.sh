#!/bin/sh
# tests/docs/run.sh - hold the man page, README.md and docs/*.md to what
# tinspect does.
#
# usage: sh tests/docs/run.sh [--regen] TINSPECT
#
# 1. man/tinspect.1 renders cleanly: `groff -man -ww -z` and (when mandoc is
#    installed) `mandoc -T lint` print nothing.
# 2. Every example of the man page's EXAMPLES works. The page is rendered to
#    text first and the commands are read from the RENDERED lines
#    (`$ tinspect ...`), so an example whose quoting does not render is a
#    failure, not a typo a reader finds. Each runs with sh in a scratch folder
#    where tinspect is on PATH and the file names the examples use are links
#    to bundled fixtures (see setup_scratch). An example must exit 0 and print
#    something, except those listed in man_example_status.
# 3. Every example of README.md and of each docs/*.md page is run and its
#    output compared, in the same scratch folder (so paths in a docs/ page's
#    examples are relative to the repository root, as in the README). In a
#    fenced block, a line `$ COMMAND` is a command; the lines after it, up to
#    the next `$ ` line or the end of the block, are what it prints (stdout and
#    stderr together), exactly. A line `...` (indent allowed) stands for any
#    number of lines: the lines above it are compared with the first lines
#    printed, those below it with the last ones. A fenced block with no `$ `
#    line must follow a line `<!-- docs-test: skip REASON -->`; it is not run.
#    A failure names the file and the line of its `$ `.
# 4. Every relative link `](PATH)` or `](PATH#anchor)` of README.md and
#    docs/*.md names a file or folder that exists, relative to the page.
# 5. When bench/results.jsonl (a committed `make bench` run) exists, the
#    README's speed table is the one bench/goals.py writes from it.
#
# --regen rewrites the example outputs of README.md and every docs/*.md page
# from what the commands print (keeping each `...` and the number of lines
# around it). Read the diff before committing it: these pages are what
# readers hold tinspect to.
# Prints 'N passed, M failed' and exits 1 when anything failed.

set -u

regen=false
if [ "${1:-}" = --regen ]; then
	regen=true
	shift
fi
if [ $# -ne 1 ]; then
	echo "usage: sh tests/docs/run.sh [--regen] TINSPECT" >&2
	exit 2
fi
case $1 in
/*) bin=$1 ;;
*) bin=$(pwd)/${1#./} ;;
esac
if [ ! -x "$bin" ]; then
	echo "docs: '$1' is not an executable" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 2
man=man/tinspect.1

LC_ALL=C.UTF-8
export LC_ALL
# `tinspect memory` on the CPU assumes the instruction set oneDNN would use here (cpuid, at most
# ONEDNN_MAX_CPU_ISA) and names it: the expected outputs are AVX2's, which every x86-64 machine
# this project's PyTorch measurements were taken on has (an AVX-512 one is held to it by this cap).
ONEDNN_MAX_CPU_ISA=AVX2
export ONEDNN_MAX_CPU_ISA

work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-docs.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

passed=0
failed=0
pass() {
	passed=$((passed + 1))
}
fail() {
	failed=$((failed + 1))
	echo "FAIL $1"
}

# setup_scratch DIR: a folder in which the examples run as printed. `tinspect`
# and `./tinspect` are the binary under test; the repository's fixtures/ and
# tests/ are there; the names the man page's examples use are links to
# fixtures chosen so that each example shows what its text says.
setup_scratch() {
	mkdir -p "$1/bin" "$1/checkpoints"
	ln -s "$bin" "$1/bin/tinspect"
	ln -s "$bin" "$1/tinspect"
	ln -s "$root/fixtures" "$1/fixtures"
	ln -s "$root/tests" "$1/tests"
	ln -s "$root/fixtures/resnet18_small.pt" "$1/pytorch_model.bin" # a clean download
	ln -s "$root/fixtures/resnet18_small.pt" "$1/model.pt"
	ln -s "$root/fixtures/training_ckpt.pt" "$1/ckpt.pt"             # model, optimizer, args
	ln -s "$root/fixtures/docs/gpt2.pt" "$1/gpt2.pt"                 # names with 'attn'
	ln -s "$root/fixtures/docs/ddp.pt" "$1/ddp.pt"                   # names under 'module.'
	ln -s "$root/fixtures/models/lstm_tagger.json" "$1/model.json"
	# check: a model, a checkpoint that loads into it, a manifest of pairs
	ln -s "$root/tests/cli/models/check_small.json" "$1/small.json"
	ln -s "$root/fixtures/check/ok.pt" "$1/small.pt"
	printf '{"checks": [{"name": "small", "model": "small.json", "checkpoint": "small.pt"},\n%s\n' \
		' {"name": "nested", "model": "small.json", "checkpoint": "fixtures/check/nested_ddp.pt"}]}' >"$1/checks.json"
	# Two checkpoints of a project: one clean, one holding an argparse.Namespace.
	ln -s "$root/fixtures/resnet18_small.pt" "$1/checkpoints/resnet.pt"
	ln -s "$root/fixtures/training_ckpt.pt" "$1/checkpoints/last.pt"
}

# in_scratch COMMAND: run COMMAND with sh in a fresh scratch folder; its
# stdout and stderr go to $work/out, its status to $status.
in_scratch() {
	rm -rf "$work/scratch"
	mkdir "$work/scratch"
	setup_scratch "$work/scratch"
	(cd "$work/scratch" && PATH="$work/scratch/bin:$PATH" && export PATH && eval "$1") >"$work/out" 2>&1 </dev/null
	status=$?
}

# The GPU examples: the CUDA driver is found at run time. Without a GPU the
# documented answer is `CUDA not available: ...` and exit 4.
if [ -e /dev/nvidia0 ]; then
	cuda_status=0
else
	cuda_status=4
fi

# man_example_status COMMAND: the exit status the example's text promises.
man_example_status() {
	case $1 in
	*materialize*--device\ cuda*) echo "$cuda_status" ;;
	*) echo 0 ;;
	esac
}

# ---- 1. the man page renders cleanly ----

if ! command -v groff >/dev/null 2>&1; then
	fail "man_renders_with_groff: groff is not installed (Debian groff-base)"
else
	groff -man -ww -z "$man" >"$work/groff" 2>&1
	if [ -s "$work/groff" ]; then
		fail "man_renders_with_groff: groff -man -ww -z $man printed:"
		sed 's/^/  /' "$work/groff"
	else
		pass
	fi
fi

if ! command -v mandoc >/dev/null 2>&1; then
	echo "skip man_passes_mandoc_lint: mandoc is not installed (Debian mandoc)"
else
	# Its complaints about this machine's own man database are not about the page.
	mandoc -T lint "$man" 2>&1 | grep -v 'outdated mandoc.db' >"$work/lint"
	if [ -s "$work/lint" ]; then
		fail "man_passes_mandoc_lint: mandoc -T lint $man printed:"
		sed 's/^/  /' "$work/lint"
	else
		pass
	fi
fi

# ---- 2. every example of the man page works, as rendered ----

# Wide enough that no example wraps; no bold, underline or colour codes.
groff -man -Tutf8 -rLL=300n -P-cbou "$man" 2>/dev/null |
	sed -n '/^EXAMPLES/,/^[A-Z][A-Z ]*$/p' |
	sed -n 's/^ *\$ \(tinspect .*\)$/\1/p' >"$work/man-examples"
if [ ! -s "$work/man-examples" ]; then
	fail "man_examples_found: no '\$ tinspect ...' line in the rendered EXAMPLES of $man"
fi
while IFS= read -r cmd; do
	want=$(man_example_status "$cmd")
	in_scratch "$cmd"
	if [ "$status" != "$want" ]; then
		fail "man example: \$ $cmd"
		echo "  exit status $status, want $want; it printed:"
		sed 's/^/  | /' "$work/out" | head -n 20
	elif [ "$want" = 0 ] && [ ! -s "$work/out" ]; then
		fail "man example: \$ $cmd"
		echo "  it printed nothing"
	else
		pass
	fi
done <"$work/man-examples"

# ---- 3. every example of README.md and docs/*.md prints what the page shows ----

# compare WANT GOT: exact, or around the first `...` line of WANT.
compare() {
	k=$(awk '/^[[:space:]]*\.\.\.[[:space:]]*$/ { print NR - 1; f = 1; exit } END { if (!f) print -1 }' "$1")
	if [ "$k" = -1 ]; then
		cmp -s "$1" "$2"
		return
	fi
	total=$(wc -l <"$1")
	l=$((total - k - 1))
	[ "$(wc -l <"$2")" -ge $((k + l)) ] || return 1
	head -n "$k" "$1" >"$work/want-head"
	head -n "$k" "$2" >"$work/got-head"
	cmp -s "$work/want-head" "$work/got-head" || return 1
	[ "$l" -eq 0 ] && return 0
	tail -n "$l" "$1" >"$work/want-tail"
	tail -n "$l" "$2" >"$work/got-tail"
	cmp -s "$work/want-tail" "$work/got-tail"
}

# regen_text WANT GOT: what the page should show, keeping WANT's `...`.
regen_text() {
	k=$(awk '/^[[:space:]]*\.\.\.[[:space:]]*$/ { print NR - 1; f = 1; exit } END { if (!f) print -1 }' "$1")
	if [ "$k" = -1 ]; then
		cat "$2"
		return
	fi
	total=$(wc -l <"$1")
	l=$((total - k - 1))
	head -n "$k" "$2"
	sed -n "$((k + 1))p" "$1"
	[ "$l" -gt 0 ] && tail -n "$l" "$2"
	return 0
}

# check_page PAGE: run PAGE's examples and compare (with --regen, rewrite
# PAGE's outputs). $work/ex/N.cmd holds command N, N.want what PAGE shows
# after it, N.line the line of its `$ `.
check_page() {
	page=$1
	rm -rf "$work/ex"
	mkdir "$work/ex"
	awk -v dir="$work/ex" -v page="$page" '
		function close_example() {
			if (n > 0 && open) { close(dir "/" n ".want") }
			open = 0
		}
		/^```/ {
			if (!inblock) {
				inblock = 1; start = NR; commands = 0
				skip = (prev ~ /^<!-- docs-test: skip .*-->$/)
			} else {
				close_example()
				if (!skip && commands == 0)
					print page ":" start ": a fenced block shows no `$ ` command and no <!-- docs-test: skip REASON --> line precedes it" > (dir "/errors")
				inblock = 0
			}
			prev = $0; next
		}
		inblock && !skip && /^\$ / {
			close_example()
			n++; commands++; open = 1
			printf "%s\n", substr($0, 3) > (dir "/" n ".cmd"); close(dir "/" n ".cmd")
			print NR > (dir "/" n ".line"); close(dir "/" n ".line")
			printf "" > (dir "/" n ".want")
			prev = $0; next
		}
		inblock && open { print > (dir "/" n ".want") }
		{ prev = $0 }
		END { print n + 0 > (dir "/count") }
	' "$page"
	if [ -s "$work/ex/errors" ]; then
		while IFS= read -r e; do fail "doc_blocks_are_examples: $e"; done <"$work/ex/errors"
	fi

	count=$(cat "$work/ex/count")
	i=1
	while [ "$i" -le "$count" ]; do
		cmd=$(cat "$work/ex/$i.cmd")
		line=$(cat "$work/ex/$i.line")
		in_scratch "$cmd"
		want_file=$work/ex/$i.want
		if $regen; then
			regen_text "$want_file" "$work/out" >"$work/ex/$i.new"
			want_file=$work/ex/$i.new
		fi
		if compare "$want_file" "$work/out"; then
			pass
		else
			fail "$page:$line: \$ $cmd"
			echo "  output differs (--- $page, +++ got; exit status $status):"
			diff -u "$want_file" "$work/out" | sed '1,2d; s/^/  /'
		fi
		i=$((i + 1))
	done

	if $regen && [ "$count" -gt 0 ]; then
		# Put each command's new output in place of the old one.
		awk -v dir="$work/ex" '
			/^```/ {
				if (inblock) { inblock = 0; out = 0 }
				else { inblock = 1; skip = (prev ~ /^<!-- docs-test: skip .*-->$/) }
				prev = $0; print; next
			}
			inblock && !skip && /^\$ / {
				n++; print
				f = dir "/" n ".new"
				while ((getline l < f) > 0) print l
				close(f); out = 1; prev = $0; next
			}
			inblock && out { next }
			{ prev = $0; print }
		' "$page" >"$work/page.new"
		cp "$work/page.new" "$page"
		echo "regenerated the outputs of $count examples of $page; read git diff $page"
	fi
}

pages="README.md"
for p in docs/*.md; do
	[ -f "$p" ] && pages="$pages $p"
done
for p in $pages; do
	check_page "$p"
done

# ---- 4. every relative link of README.md and docs/*.md exists ----

for p in $pages; do
	dir=$(dirname "$p")
	# `](target)` outside fenced blocks; web addresses and same-page anchors are not checked.
	awk '/^```/ { inblock = !inblock; next } !inblock { print }' "$p" |
		grep -o '](<*[^)>]*>*)' | sed 's/^](<*//; s/>*)$//' >"$work/links"
	bad=0
	while IFS= read -r target; do
		case $target in
		http://* | https://* | mailto:* | '#'*) continue ;;
		esac
		path=${target%%#*}
		if [ ! -e "$dir/$path" ]; then
			fail "doc_links_exist: $p: link to '$target': no such file or folder"
			bad=1
		fi
	done <"$work/links"
	[ "$bad" = 0 ] && pass
done

# ---- 5. the README's speed table is the committed `make bench` run's ----
# bench/bench.sh writes bench/results.jsonl and the table between the
# <!-- bench:begin --> and <!-- bench:end --> markers from it (bench/goals.py):
# a figure edited by hand, or a run not written in, fails here.
if [ -f bench/results.jsonl ]; then
	if python3 bench/goals.py readme-check bench/results.jsonl README.md >"$work/bench-check" 2>&1; then
		pass
	else
		fail "readme_speed_table: $(cat "$work/bench-check")"
	fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
